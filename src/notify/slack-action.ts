import { LonghaulError } from "../core/errors.ts";
import { slackBlockId } from "./send-slack.ts";

/** The button click of an approval message, as a Slack interactivity payload carries it. */
export interface SlackAction {
  /** `approve` or `reject`: the button's `action_id`. */
  decision: "approve" | "reject";
  /** The one-click token the button carries. */
  token: string;
  /** The buttons' `block_id`: `longhaul:<task>:<step>`. */
  blockId: string;
  /** Who clicked: the Slack user's id, and the name they go by. */
  userId: string;
  userName: string | null;
}

const bad = (message: string) => new LonghaulError("VALIDATION_FAILED", message);

/**
 * Reads a verified `block_actions` payload: its first action must be one of the approval
 * buttons longhaul sent. Anything else is refused by name, never dropped.
 */
export function slackAction(payload: unknown): SlackAction {
  const p = payload as {
    type?: unknown;
    user?: { id?: unknown; username?: unknown; name?: unknown };
    actions?: { action_id?: unknown; block_id?: unknown; value?: unknown }[];
  } | null;
  if (p?.type !== "block_actions") {
    throw bad(
      `The Slack payload is of type ${JSON.stringify(p?.type)}; only block_actions (a button click) decides an approval.`,
    );
  }
  const a = Array.isArray(p.actions) ? p.actions[0] : undefined;
  if (!a || (a.action_id !== "approve" && a.action_id !== "reject")) {
    throw bad('The Slack action is not an approval button; its action_id must be "approve" or "reject".');
  }
  if (typeof a.value !== "string" || typeof a.block_id !== "string" || !a.block_id.startsWith("longhaul:")) {
    throw bad("The Slack action carries no approval link: it did not come from a message longhaul sent.");
  }
  if (typeof p.user?.id !== "string" || p.user.id === "") throw bad("The Slack payload names no user.");
  const name = p.user.username ?? p.user.name;
  return {
    decision: a.action_id,
    token: a.value,
    blockId: a.block_id,
    userId: p.user.id,
    userName: typeof name === "string" ? name : null,
  };
}

/** Whether the buttons' block names the task and step the token does: an action for another step is refused. */
export const sameStep = (action: SlackAction, taskId: string, stepId: string): boolean =>
  action.blockId === slackBlockId(taskId, stepId);
