import { type Duration, MAX_DURATION_MS, parseDuration } from "../core/duration.ts";
import { LonghaulError } from "../core/errors.ts";
import { emailToProblem, notifyProblem } from "../core/notification.ts";
import type { ApprovalRequest } from "../core/task-type.ts";
import { isOnTimeout, ON_TIMEOUT_HINT } from "../core/wait.ts";

/** The kinds of node a graph can hold; each is one step of the same name. */
export const nodeKinds = ["job", "callback", "approval", "sleep"] as const;
export type NodeKind = (typeof nodeKinds)[number];

/** A job node's `with`. `provider` defaults to `"sim"`, `input` to `{}`. */
export interface JobWith {
  provider?: string;
  input?: unknown;
  timeout?: Duration;
  pollAfter?: Duration;
}

export interface CallbackWith {
  timeout?: Duration;
}

/** An approval node's `with`: an approval's own options; `show` names fields of the graph's `input`. */
export type ApprovalWith = ApprovalRequest;

export interface SleepWith {
  duration: Duration;
}

/** A node's `with` after templates are resolved and its fields checked for its kind. */
export type NodeCall =
  | { kind: "job"; with: JobWith }
  | { kind: "callback"; with: CallbackWith }
  | { kind: "approval"; with: ApprovalWith }
  | { kind: "sleep"; with: SleepWith };

/** The fields each kind accepts in `with`; anything else is refused so a typo cannot pass silently. */
export const withFields: Readonly<Record<NodeKind, readonly string[]>> = {
  job: ["provider", "input", "timeout", "pollAfter"],
  callback: ["timeout"],
  approval: [
    "approvers",
    "quorum",
    "timeout",
    "onTimeout",
    "title",
    "description",
    "show",
    "allowShared",
    "allowSelfApproval",
    "notify",
    "remindAfter",
    "escalate",
  ],
  sleep: ["duration"],
};

const DURATION_HINT = 'use milliseconds or a string such as "30s", "5m", "2h" or "3d"';

function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/**
 * Checks `with` for `kind` at submit time. A string holding `{{ … }}` in a typed field (a
 * duration, the quorum, …) cannot be judged yet; it is checked again once resolved.
 */
export function checkWith(kind: NodeKind, w: Record<string, unknown>, node: string): void {
  check(kind, w, `Node "${node}"`, true);
}

/** Checks a resolved `with` for `kind` and returns it typed; throws VALIDATION_FAILED naming the field. */
export function toNodeCall(kind: NodeKind, w: Record<string, unknown>, node: string): NodeCall {
  return check(kind, w, `Node "${node}" (after resolving its templates)`, false);
}

function check(kind: NodeKind, w: Record<string, unknown>, who: string, templates: boolean): NodeCall {
  const fail = (key: string, problem: string): never => {
    throw new LonghaulError("VALIDATION_FAILED", `${who}: with.${key} ${problem}.`);
  };
  const allowed = withFields[kind];
  for (const key of Object.keys(w)) {
    if (!allowed.includes(key)) {
      fail(key, `is not a field of a ${kind} node; its fields are ${allowed.join(", ")}`);
    }
  }
  /** The field's value, or undefined when absent or still a template to resolve at run time. */
  const get = (key: string): unknown => {
    const v = w[key];
    return templates && typeof v === "string" && v.includes("{{") ? undefined : v;
  };
  const duration = (key: string): void => {
    const v = get(key);
    if (v === undefined) return;
    const ms = parseDuration(v);
    if (ms === null) fail(key, `is ${show(v)}, which is not a duration; ${DURATION_HINT}`);
    if ((ms as number) > MAX_DURATION_MS) {
      fail(key, `is ${show(v)}, longer than the longest duration allowed, one year ("365d")`);
    }
  };
  const text = (key: string, nonEmpty: boolean): void => {
    const v = get(key);
    if (v === undefined) return;
    if (typeof v !== "string" || (nonEmpty && v.length === 0)) {
      fail(key, `is ${show(v)}; it must be a ${nonEmpty ? "non-empty " : ""}string`);
    }
  };

  switch (kind) {
    case "job":
      text("provider", true);
      duration("timeout");
      duration("pollAfter");
      break;
    case "callback":
      duration("timeout");
      break;
    case "sleep":
      if (w.duration === undefined) fail("duration", `is missing; a sleep node needs it (${DURATION_HINT})`);
      duration("duration");
      break;
    case "approval": {
      duration("timeout");
      text("title", false);
      text("description", false);
      const approvers = get("approvers");
      if (
        approvers !== undefined &&
        (!Array.isArray(approvers) || !approvers.every((a) => typeof a === "string" && a.length > 0))
      ) {
        fail("approvers", `is ${show(approvers)}; it must be a list of non-empty strings`);
      }
      const quorum = get("quorum");
      if (quorum !== undefined) {
        if (typeof quorum !== "number" || !Number.isInteger(quorum) || quorum < 1) {
          fail("quorum", `is ${show(quorum)}; it must be a whole number of at least 1`);
        }
        // Approvers still to come from a template are judged once resolved.
        const named = Array.isArray(approvers) ? approvers.length : w.approvers === undefined ? 0 : null;
        if (named === 0 && (quorum as number) > 1) {
          fail(
            "quorum",
            `is ${show(quorum)} but no approvers are named; list at least ${show(quorum)} in with.approvers, or use quorum 1`,
          );
        }
        if (named !== null && named > 0 && (quorum as number) > named) {
          fail("quorum", `is ${show(quorum)} but only ${named} approvers are listed`);
        }
      }
      const fields = get("show");
      if (
        fields !== undefined &&
        (!Array.isArray(fields) || !fields.every((f) => typeof f === "string" && f.length > 0))
      ) {
        fail("show", `is ${show(fields)}; it must be a list of input field names`);
      }
      const onTimeout = get("onTimeout");
      if (onTimeout !== undefined && !isOnTimeout(onTimeout)) {
        fail("onTimeout", `is ${show(onTimeout)}; it must be ${ON_TIMEOUT_HINT}`);
      }
      duration("remindAfter");
      const notify = get("notify");
      // Names of configured notifiers are looked up at submit (`graphNotifyProblem`), where the config is known.
      const notifyWrong =
        notifyProblem(notify, "with.notify", null) ??
        emailToProblem(notify, "with.notify", Array.isArray(approvers) ? (approvers as string[]) : []);
      if (notifyWrong !== null) throw new LonghaulError("VALIDATION_FAILED", `${who}: ${notifyWrong}.`);
      const escalate = get("escalate");
      if (escalate !== undefined) {
        if (typeof escalate !== "object" || escalate === null || Array.isArray(escalate)) {
          fail(
            "escalate",
            `is ${show(escalate)}; it must be {"after": <duration>, "to": [approvers], "notify"?: [...]}`,
          );
        }
        const e = escalate as Record<string, unknown>;
        const extra = Object.keys(e).find((k) => !["after", "to", "notify"].includes(k));
        if (extra !== undefined)
          fail(`escalate.${extra}`, "is not a field of escalate; its fields are after, to, notify");
        if (!Array.isArray(e.to) || !e.to.every((a) => typeof a === "string" && a.length > 0)) {
          fail("escalate.to", `is ${show(e.to)}; it must be a list of non-empty approver names`);
        }
        if (e.after !== undefined) {
          const ms = parseDuration(e.after);
          if (ms === null || ms > MAX_DURATION_MS)
            fail("escalate.after", `is ${show(e.after)}; ${DURATION_HINT}`);
        }
        const p = notifyProblem(e.notify, "with.escalate.notify", null);
        if (p !== null) throw new LonghaulError("VALIDATION_FAILED", `${who}: ${p}.`);
      }
      if (onTimeout === "escalate" && escalate === undefined && w.escalate === undefined) {
        fail("onTimeout", 'is "escalate" but with.escalate names nobody to escalate to');
      }
      for (const flag of ["allowShared", "allowSelfApproval"]) {
        const v = get(flag);
        if (v !== undefined && typeof v !== "boolean") fail(flag, `is ${show(v)}; it must be true or false`);
      }
      break;
    }
  }
  return { kind, with: withoutUndefined(w) } as NodeCall;
}

// A whole-value template that resolved to a missing path leaves `undefined`: treat it as absent.
function withoutUndefined(w: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(w).filter(([, v]) => v !== undefined));
}
