import { useState } from "preact/hooks";
import type { TaskStep as Step } from "../../src/client/index.ts";
import { ApiError, request } from "./api.ts";
import { decidedBy } from "./decided-by.ts";
import { pathOf } from "./format.ts";
import { ClaimMark, When } from "./ui.tsx";

const NAME_KEY = "longhaul.approverName";

function rememberedName(): string {
  try {
    return localStorage.getItem(NAME_KEY) ?? "";
  } catch {
    return "";
  }
}

/**
 * Approve or reject a waiting approval step. The links are capability URLs: posting to one
 * needs no API key. They are posted by path, so the decision goes to the server that served
 * this page even when the links name the deployment's public URL.
 */
export function ApprovalForm({ step, onDecided }: { step: Step; onDecided: () => void }) {
  const decided = new Set(step.decisions?.map((d) => d.approver) ?? []);
  const links = (step.approvals ?? []).filter((l) => l.approver === null || !decided.has(l.approver));
  const [who, setWho] = useState(0);
  const [name, setName] = useState(rememberedName);
  const [comment, setComment] = useState("");
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ ok: boolean; text: string } | null>(null);
  const link = links[who] ?? links[0];

  if (!link) return <p class="muted">Every listed approver has decided.</p>;

  const decide = async (decision: "approve" | "reject") => {
    setBusy(true);
    setResult(null);
    const approver = link.approver ?? (name.trim() || null);
    if (link.approver === null && approver) {
      try {
        localStorage.setItem(NAME_KEY, approver);
      } catch {
        // Not remembered; nothing else depends on it.
      }
    }
    try {
      // An empty field is left out: the body says only what was typed.
      const body: { comment?: string; approver?: string } = {};
      if (comment.trim()) body.comment = comment.trim();
      if (link.approver === null && approver) body.approver = approver;
      await request(pathOf(decision === "approve" ? link.approve_url : link.reject_url), { body });
      setResult({
        ok: true,
        text: decision === "approve" ? "Approved. The task resumes." : "Rejected. The task resumes.",
      });
      setComment("");
      onDecided();
    } catch (err) {
      setResult({ ok: false, text: err instanceof ApiError ? `${err.message} (${err.code})` : String(err) });
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="approval-form" onSubmit={(e) => e.preventDefault()} data-step={step.id}>
      <div class="approval-fields">
        {link.approver !== null ? (
          links.length > 1 ? (
            <label>
              Decide as
              <select value={who} onChange={(e) => setWho(Number((e.target as HTMLSelectElement).value))}>
                {links.map((l, i) => (
                  <option key={l.approver} value={i}>
                    {l.approver}
                  </option>
                ))}
              </select>
            </label>
          ) : (
            <label>
              Decide as
              <input value={link.approver} disabled />
            </label>
          )
        ) : (
          <label>
            Your name
            <input
              name="approver"
              value={name}
              placeholder="who decides (shown as claimed)"
              onInput={(e) => setName((e.target as HTMLInputElement).value)}
            />
          </label>
        )}
        <label class="grow">
          Comment
          <input
            name="comment"
            value={comment}
            placeholder="optional"
            onInput={(e) => setComment((e.target as HTMLInputElement).value)}
          />
        </label>
        <div class="buttons">
          <button type="button" class="approve" disabled={busy} onClick={() => decide("approve")}>
            Approve
          </button>
          <button type="button" class="reject" disabled={busy} onClick={() => decide("reject")}>
            Reject
          </button>
        </div>
      </div>
      {step.quorum && step.quorum > 1 ? (
        <p class="muted small">
          Needs {step.quorum} approvals; {step.decisions?.filter((d) => d.decision === "approve").length ?? 0}{" "}
          so far.
        </p>
      ) : null}
      {step.deadline ? (
        <p class="muted small">
          Decide before <When at={step.deadline} />.
        </p>
      ) : null}
      {result ? <p class={result.ok ? "ok small" : "bad small"}>{result.text}</p> : null}
    </form>
  );
}

/** Who decided; a name typed on an anonymous link is marked as claimed. */
function DecidedBy({ d }: { d: { approver: string; claimed_by?: string | undefined } }) {
  const who = decidedBy(d);
  return (
    <>
      <strong>{who.name}</strong>
      <ClaimMark claimed={who.claimed} />
    </>
  );
}

export function Decisions({ step }: { step: Step }) {
  if (!step.decisions?.length) return null;
  return (
    <ul class="decisions">
      {step.decisions.map((d) => (
        <li key={`${d.approver}:${d.claimed_by ?? ""}`}>
          <DecidedBy d={d} /> {d.decision === "approve" ? "approved" : "rejected"}
          {d.comment ? <> — “{d.comment}”</> : null}
          {d.channel ? <span class="muted"> · via {d.channel}</span> : null}
          {d.user_id ? <span class="muted"> · user {d.user_id}</span> : null}{" "}
          <span class="muted">
            · <When at={d.decided_at} relative={false} />
          </span>
        </li>
      ))}
    </ul>
  );
}
