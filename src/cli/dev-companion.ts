import type { ErrorInfo } from "../core/errors.ts";
import type { EventLogStore, TaskEventRow, TaskStore } from "../store/store.ts";

// `longhaul dev`'s story of the tasks it runs: one readable line per event that matters, read
// from the task event log that feeds the SSE streams (ARCHITECTURE §4.7: `onTaskEvents` after
// each commit, then `taskEvents` from a cursor), so it shows what a client of /v1/events sees
// and needs no hook in the engine.

/** What a line needs to know of its task: its type, and when it was submitted (for "in 2.1 s"). */
export interface TaskFacts {
  type: string;
  createdAt: number;
}

export interface LineStyle {
  /** ANSI colours (a TTY, and NO_COLOR not set). */
  color: boolean;
  /** The task's page in the dashboard. */
  link(taskId: string): string;
  /** Under `--watch`: a step-order failure is then most likely the reload's doing. */
  watching?: boolean;
}

const ANSI = { red: 31, green: 32, yellow: 33, cyan: 36, gray: 90, dim: 2 } as const;
type Tone = keyof typeof ANSI;
const paint = (style: LineStyle, tone: Tone, text: string) =>
  style.color ? `\x1b[${ANSI[tone]}m${text}\x1b[0m` : text;

/** Whether output to `stream` gets colours: a TTY, unless NO_COLOR is set to anything but empty. */
export function wantsColor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  return stream.isTTY === true && !env.NO_COLOR;
}

const two = (n: number) => String(n).padStart(2, "0");
/** `14:03:07`, local time, as a terminal reader reads a clock. */
export const clockTime = (ms: number) => {
  const d = new Date(ms);
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
};

/** `840 ms`, `2.1 s`, `3 min 12 s`, `2 h 5 min`. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** A wait's deadline: the time today, the date and time on another day. */
function until(iso: unknown, now: number): string | null {
  if (typeof iso !== "string") return null;
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return null;
  const sameDay = new Date(at).toDateString() === new Date(now).toDateString();
  return sameDay ? clockTime(at) : `${iso.slice(0, 10)} ${clockTime(at)}`;
}

/** What a `step.waiting` event says the task waits on. */
function waitingOn(d: Record<string, unknown>, now: number): string {
  const step = typeof d.step_id === "string" ? ` (step "${d.step_id}")` : "";
  const deadline = until(d.deadline, now);
  const by = deadline ? `, until ${deadline}` : "";
  switch (d.kind) {
    case "job":
      return `on a job at provider ${String(d.provider)}${step}`;
    case "callback":
      return `on a callback${by}${step}`;
    case "approval": {
      const who = Array.isArray(d.approvers) && d.approvers.length > 0 ? ` by ${d.approvers.join(", ")}` : "";
      return `on an approval${who}${by}${step}`;
    }
    case "sleep":
      return `asleep until ${deadline ?? "its timer"}${step}`;
    case "wait_event":
      return `on event "${String(d.event)}"${by}${step}`;
    default:
      return `on ${String(d.kind)}${step}`;
  }
}

function errorText(e: unknown, style: LineStyle): string {
  const err = (e ?? {}) as Partial<ErrorInfo>;
  const text = `${err.code ?? "ERROR"}: ${err.message ?? "(no message)"}`;
  return err.code === "STEP_ORDER_MISMATCH" && style.watching
    ? `${text} (the reloaded code calls this task's steps in another order)`
    : text;
}

/**
 * The line an event gets, or null for one that tells a reader nothing new (a step that
 * started, a job's progress, the task resuming).
 */
export function companionLine(e: TaskEventRow, task: TaskFacts | null, style: LineStyle): string | null {
  const d = (e.data ?? {}) as Record<string, unknown>;
  let verb: string;
  let tone: Tone;
  let detail = "";
  switch (e.type) {
    case "task.created":
      [verb, tone] = ["submitted", "cyan"];
      if (typeof d.rerun_of === "string") detail = `re-run of ${d.rerun_of}`;
      break;
    case "step.waiting":
      [verb, tone, detail] = ["waiting", "yellow", waitingOn(d, e.createdAt)];
      break;
    case "task.succeeded":
      [verb, tone] = ["succeeded", "green"];
      if (task) detail = `in ${duration(e.createdAt - task.createdAt)}`;
      break;
    case "task.failed":
      [verb, tone, detail] = ["failed", "red", errorText(d.error, style)];
      break;
    case "task.timed_out":
      [verb, tone, detail] = ["timed out", "red", errorText(d.error, style)];
      break;
    case "task.canceled":
      [verb, tone] = ["canceled", "gray"];
      break;
    default:
      return null;
  }
  const type = task?.type ?? (typeof d.type === "string" ? d.type : "?");
  const parts = [
    paint(style, "dim", clockTime(e.createdAt)),
    paint(style, tone, verb.padEnd(9)),
    type,
    e.taskId,
    ...(detail ? [detail] : []),
    paint(style, "dim", style.link(e.taskId)),
  ];
  return parts.join("  ");
}

/** The events `companionLine` gives a line. */
const SHOWN = new Set([
  "task.created",
  "step.waiting",
  "task.succeeded",
  "task.failed",
  "task.timed_out",
  "task.canceled",
]);

/**
 * Follows every tenant's task events from now on and writes a line for each that matters.
 * A tenant's cursor starts at its newest event when `start` runs (`tenants`), or just before the
 * first event announced for it.
 */
export class DevCompanion {
  private readonly cursors = new Map<string, number>();
  private readonly draining = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  private readonly facts = new Map<string, TaskFacts>();
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly store: EventLogStore & Pick<TaskStore, "getTask">,
    private readonly style: LineStyle,
    private readonly write: (line: string) => void,
    /** Told of a read that failed; the companion goes on with the next announcement. */
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  async start(tenants: readonly string[]): Promise<void> {
    for (const t of tenants) this.cursors.set(t, await this.store.lastTaskEventSeq(t));
    this.unsubscribe = this.store.onTaskEvents((tenantId, seq) => {
      if (!this.cursors.has(tenantId)) this.cursors.set(tenantId, seq - 1);
      this.drain(tenantId);
    });
  }

  close(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  /** Resolves once every event announced so far has its line. */
  async idle(): Promise<void> {
    while (this.draining.size > 0) await Promise.all(this.draining.values());
  }

  private drain(tenantId: string): void {
    if (this.draining.has(tenantId)) {
      this.again.add(tenantId);
      return;
    }
    const run = (async () => {
      do {
        this.again.delete(tenantId);
        for (;;) {
          const rows = await this.store.taskEvents(tenantId, this.cursors.get(tenantId) ?? 0, 100);
          if (rows.length === 0) break;
          for (const e of rows) await this.show(e);
          this.cursors.set(tenantId, rows.at(-1)!.seq);
        }
      } while (this.again.has(tenantId));
    })()
      .catch(this.onError)
      .finally(() => this.draining.delete(tenantId));
    this.draining.set(tenantId, run);
  }

  private async show(e: TaskEventRow): Promise<void> {
    if (!SHOWN.has(e.type)) return;
    if (e.type === "task.created") {
      const d = (e.data ?? {}) as { type?: string };
      this.facts.set(e.taskId, { type: d.type ?? "?", createdAt: e.createdAt });
    }
    const line = companionLine(e, await this.factsOf(e), this.style);
    if (line !== null) this.write(line);
    if (e.type !== "task.created" && e.type !== "step.waiting") this.facts.delete(e.taskId);
  }

  /** A task submitted before this process started is read once from the store. */
  private async factsOf(e: TaskEventRow): Promise<TaskFacts | null> {
    const known = this.facts.get(e.taskId);
    if (known) return known;
    const detail = await this.store.getTask(e.tenantId, e.taskId);
    if (!detail) return null;
    const facts = { type: detail.task.type, createdAt: detail.task.createdAt };
    this.facts.set(e.taskId, facts);
    return facts;
  }
}
