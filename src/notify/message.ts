import { inputField } from "../core/input-field.ts";
import type { NotifyReason } from "../core/notification.ts";
import type { ApprovalConfig } from "../core/wait.ts";
import type { StepRow, TaskRow } from "../store/store.ts";
import type { CapabilityUrls } from "../tokens/capability-urls.ts";

/** What every channel says: the same facts, rendered each channel's way. */
export interface ApprovalMessage {
  taskId: string;
  taskType: string;
  stepId: string;
  reason: NotifyReason;
  title: string;
  description: string | null;
  /** The input fields the step shows (`show`), by name; nothing else of the input. */
  fields: Record<string, unknown>;
  /** Null: the step's own links (an approval without named approvers). */
  approver: string | null;
  links: { approval_url: string; approve_url: string; reject_url: string };
  deadline: string | null;
}

/**
 * The message for one approver (or the step's links), its links minted from the stored step
 * as the task view mints them: the same step gives the same links, valid until the step's
 * deadline (ARCHITECTURE §4.5), so one sent before the first click already works.
 */
export function approvalMessage(
  urls: CapabilityUrls,
  task: TaskRow,
  step: StepRow,
  approver: string | null,
  reason: NotifyReason,
): ApprovalMessage {
  const config = step.config as ApprovalConfig;
  const ws = { stepId: step.stepId, attempts: step.attempts, deadlineAt: step.deadlineAt };
  const who = approver ?? undefined;
  const fields: Record<string, unknown> = {};
  for (const name of config.show ?? []) {
    // Graph nodes name fields of the graph's `input`; show them by the name the node gave.
    fields[name.startsWith("input.") && task.type === "graph" ? name.slice(6) : name] = inputField(
      task.input,
      name,
    );
  }
  return {
    taskId: task.id,
    taskType: task.type,
    stepId: step.stepId,
    reason,
    title: config.title ?? `Approve step "${step.stepId}" of ${task.type}`,
    description: config.description,
    fields,
    approver,
    links: {
      approval_url: urls.approval(task.tenantId, task.id, ws, "decide", who),
      approve_url: urls.approval(task.tenantId, task.id, ws, "approve", who),
      reject_url: urls.approval(task.tenantId, task.id, ws, "reject", who),
    },
    deadline: step.deadlineAt === null ? null : new Date(step.deadlineAt).toISOString(),
  };
}

const LEAD: Record<NotifyReason, string> = {
  request: "Your decision is requested",
  reminder: "Reminder: your decision is still requested",
  escalation: "Escalated to you: a decision is requested",
};

/** The first line of every rendering. */
export const leadLine = (m: ApprovalMessage): string => `${LEAD[m.reason]}: ${m.title}`;

/** A field's value as one line of text, cut short. */
export const fieldText = (v: unknown): string => {
  const t = v === undefined ? "(not set)" : typeof v === "string" ? v : JSON.stringify(v);
  return t.length > 500 ? `${t.slice(0, 500)}…` : t;
};

/** The message as plain text: what an email's text part and a chat fallback say. */
export function plainText(m: ApprovalMessage): string {
  const lines = [leadLine(m), ""];
  if (m.description) lines.push(m.description, "");
  for (const [k, v] of Object.entries(m.fields)) lines.push(`${k}: ${fieldText(v)}`);
  if (Object.keys(m.fields).length > 0) lines.push("");
  lines.push(`Approve: ${m.links.approve_url}`, `Reject: ${m.links.reject_url}`);
  lines.push(`Review and comment: ${m.links.approval_url}`);
  if (m.deadline) lines.push("", `Decide before ${m.deadline}.`);
  lines.push("", `Task ${m.taskId}, step ${m.stepId}${m.approver ? `, for ${m.approver}` : ""}.`);
  return lines.join("\n");
}
