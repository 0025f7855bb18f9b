import { inputField } from "../core/input-field.ts";
import { type ApprovalConfig, decidedBy } from "../core/wait.ts";
import type { ApprovalDecisionRow, StepRow, TaskRow } from "../store/store.ts";
import { escapeHtml } from "./page-headers.ts";

const esc = escapeHtml;

export interface ApprovalPageModel {
  task: TaskRow;
  step: StepRow;
  decisions: ApprovalDecisionRow[];
  approver: string | null;
  /** The link that served the page; its form posts back to it. */
  actionUrl: string;
  /** The decisions that link may take: both for `approval_url`, one for a one-click link. */
  allowed: ("approve" | "reject")[];
  /** A message after a decision was posted from this page. */
  notice: string | null;
}

/**
 * Only the input fields the step opted into (`show`): whoever holds a link sees the page, so
 * the rest of the task's input stays out of it. A dotted name reads a nested field.
 */
function shownInput(input: unknown, show: string[]): string {
  if (show.length === 0) return "";
  const rows = show.map((name) => {
    const v = inputField(input, name);
    const text = v === undefined ? "(not set)" : typeof v === "string" ? v : JSON.stringify(v, null, 2);
    return `<dt>${esc(name)}</dt><dd><pre>${esc(text.length > 20_000 ? `${text.slice(0, 20_000)}…` : text)}</pre></dd>`;
  });
  return `<dl class="input">${rows.join("")}</dl>`;
}

/**
 * The page behind an approval link: what is asked, who decided so far, and a form to
 * approve or reject with a comment. It works without JavaScript (plain form posts).
 */
export function renderApprovalPage(m: ApprovalPageModel): string {
  const config = (m.step.config ?? {}) as Partial<ApprovalConfig>;
  const title = config.title ?? `Approve step “${m.step.stepId}” of ${m.task.type}`;
  const waiting = m.step.status === "waiting";
  const shown = shownInput(m.task.input, config.show ?? []);
  const decisions = m.decisions
    .map((d) => {
      const who = decidedBy(config, d.approver);
      const name =
        who.claimedBy === null
          ? `<strong>${esc(who.approver)}</strong>`
          : `<strong>${esc(who.claimedBy)}</strong> <span class="claim">(claimed name, not verified)</span>`;
      return `<li>${name} ${d.decision === "approve" ? "approved" : "rejected"} at ${esc(new Date(d.decidedAt).toISOString())}${d.comment ? `: “${esc(d.comment)}”` : ""}</li>`;
    })
    .join("");
  const outcome = m.step.output as { approved?: boolean } | null;
  const state = waiting
    ? `Waiting for ${config.quorum ?? 1} approval(s)${config.approvers?.length ? ` from ${esc(config.approvers.join(", "))}` : ""}; deadline ${esc(m.step.deadlineAt ? new Date(m.step.deadlineAt).toISOString() : "none")}.`
    : m.step.status === "succeeded"
      ? `Decided: <strong>${outcome?.approved ? "approved" : "rejected"}</strong>.`
      : `This request is closed (${esc(m.step.status)}).`;
  const who = m.approver
    ? `<p>You are deciding as <strong>${esc(m.approver)}</strong>.</p>`
    : `<label>Your name <input name="approver" maxlength="200" autocomplete="name"></label>
  <p class="meta">This link does not say who holds it: the name is recorded as claimed, not verified.</p>`;
  const form = waiting
    ? `<form method="post">
  ${who}
  <label>Comment <textarea name="comment" rows="3" maxlength="2000"></textarea></label>
  <div class="actions">
    ${m.allowed
      .map(
        (d) =>
          `<button type="submit" formaction="${esc(m.actionUrl)}" name="decision" value="${d}" class="${d}">${d === "approve" ? "Approve" : "Reject"}</button>`,
      )
      .join("\n    ")}
  </div>
</form>`
    : "";
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${esc(title)} · longhaul</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:42rem;margin:2rem auto;padding:0 1rem;color:#1d2433}
h1{font-size:1.4rem}.meta{color:#5b6478}.notice{background:#eef6ee;border:1px solid #9c9;padding:.5rem 1rem;border-radius:6px}
dt{font-weight:600}dd{margin:0 0 .5rem}pre{background:#f4f5f8;padding:.75rem;border-radius:6px;overflow:auto;max-height:16rem}
label{display:block;margin:.75rem 0}input,textarea{width:100%;box-sizing:border-box;font:inherit;padding:.4rem}
.actions{display:flex;gap:.75rem}button{font:inherit;padding:.5rem 1.25rem;border-radius:6px;border:0;color:#fff;cursor:pointer}
.approve{background:#1f7a3a}.reject{background:#b3261e}.claim{color:#8a5a00}
</style></head><body>
<h1>${esc(title)}</h1>
${config.description ? `<p>${esc(config.description)}</p>` : ""}
${m.notice ? `<p class="notice">${esc(m.notice)}</p>` : ""}
<p class="meta">Task <code>${esc(m.task.id)}</code> (${esc(m.task.type)}), created ${esc(new Date(m.task.createdAt).toISOString())}</p>
<p>${state}</p>
${decisions ? `<ul>${decisions}</ul>` : ""}
${shown}
${form}
</body></html>`;
}
