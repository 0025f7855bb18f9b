/**
 * Who the dashboard says made a decision (a step's `decisions[]` entry or a `step.decided`
 * event). A name the holder of an anonymous approval link typed comes as `claimed_by`: it is
 * shown as a claim, never as who decided, since anyone holding the link could type any name.
 */
export function decidedBy(d: { approver?: unknown; claimed_by?: unknown }): {
  name: string;
  claimed: boolean;
} {
  if (typeof d.claimed_by === "string" && d.claimed_by !== "") return { name: d.claimed_by, claimed: true };
  return { name: typeof d.approver === "string" ? d.approver : "someone", claimed: false };
}

/** The words beside a claimed name, and what hovering them explains. */
export const CLAIM_LABEL = "claimed";
export const CLAIM_TITLE = "Typed by whoever held the approval link, which names nobody: not verified.";
