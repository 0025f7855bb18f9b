import type { Clock } from "../../core/clock.ts";
import type { IdGenerator } from "../../core/ids.ts";
import type { JobRunner } from "./job-runner.ts";
import { parseModelInput, runModel } from "./llm.ts";
import type { SimBatch, SimFile } from "./sim-batch-store.ts";
import type { SimStore } from "./sim-store.ts";
import type { TimerSet } from "./timer-set.ts";

export interface BatchRunnerOptions {
  store: SimStore;
  jobs: JobRunner;
  timers: TimerSet;
  clock: Clock;
  ids: IdGenerator;
  defaultDurationMs: number;
}

export interface NewBatch {
  inputFileId: string;
  endpoint: string;
  completionWindow: string;
  metadata: Record<string, unknown>;
  webhookUrl: string | null;
}

/**
 * Batches in OpenAI's shapes: `in_progress` from creation, `completed` after
 * `metadata.sim_delay_ms` (or the default duration), with an output file (`{id, custom_id,
 * response: {status_code: 200, request_id, body}, error: null}` per request that ran), an
 * error file (the same with a 4xx/5xx response) and `request_counts`. Each request runs
 * through the fake model (llm.ts). `metadata.sim_fail` / `sim_expire` (arrays, or
 * comma-separated strings, of custom_ids) fail or leave out those requests on their first run
 * in the batch's scope (`metadata.longhaul_task`, else the batch), so a resubmission of them
 * succeeds. The end is sent as the simulator's jobs send theirs: a `job.succeeded` (or
 * `job.canceled`) event whose `job_id` is the batch id and which carries no output.
 */
export class BatchRunner {
  readonly #o: BatchRunnerOptions;

  constructor(options: BatchRunnerOptions) {
    this.#o = options;
  }

  upload(key: string | null, purpose: string, filename: string, bytes: Buffer): SimFile {
    const { store, clock, ids } = this.#o;
    return store.transaction(() => {
      const known = key === null ? undefined : store.batches.fileIdByKey(key);
      if (known !== undefined) return store.batches.file(known)!;
      const file = { id: ids.next("file"), purpose, filename, bytes, createdAt: clock.now() };
      store.batches.insertFile(file, key);
      return file;
    });
  }

  file(id: string): SimFile | undefined {
    return this.#o.store.batches.file(id);
  }

  /** The batch of `key`, created and scheduled unless one exists (`created` says which). */
  create(key: string, b: NewBatch): { batch: SimBatch; created: boolean } {
    const { store, clock, ids } = this.#o;
    const result = store.transaction(() => {
      const existing = store.batches.batchByKey(key);
      if (existing) return { batch: existing, created: false };
      const now = clock.now();
      const delay = Number(b.metadata.sim_delay_ms);
      const id = ids.next("batch");
      const batch: SimBatch = {
        id,
        idempotencyKey: key,
        webhookUrl: b.webhookUrl,
        endsAt: now + (Number.isFinite(delay) && delay >= 0 ? delay : this.#o.defaultDurationMs),
        endedAt: null,
        object: {
          id,
          object: "batch",
          endpoint: b.endpoint,
          errors: null,
          input_file_id: b.inputFileId,
          completion_window: b.completionWindow,
          status: "in_progress",
          output_file_id: null,
          error_file_id: null,
          created_at: seconds(now),
          in_progress_at: seconds(now),
          completed_at: null,
          cancelled_at: null,
          request_counts: { total: 0, completed: 0, failed: 0 },
          metadata: b.metadata,
        },
      };
      store.batches.insertBatch(batch);
      return { batch, created: true };
    });
    if (result.created) this.#schedule(result.batch);
    return result;
  }

  /** The batch as of now: one whose end has come is ended before answering. */
  batch(id: string): SimBatch | undefined {
    const batch = this.#o.store.batches.batch(id);
    if (batch && batch.endedAt === null && this.#o.clock.now() >= batch.endsAt) this.#finish(id);
    return this.#o.store.batches.batch(id);
  }

  /** Cancels a batch not yet ended; `canceled: false` when it had ended. */
  cancel(id: string): { batch: SimBatch; canceled: boolean } | undefined {
    const batch = this.batch(id);
    if (batch === undefined) return undefined;
    if (batch.endedAt !== null) return { batch, canceled: false };
    this.#o.timers.cancel(`batch:${id}`);
    const now = this.#o.clock.now();
    const object = { ...batch.object, status: "cancelled", cancelled_at: seconds(now) };
    this.#end(batch, "job.canceled", () => this.#o.store.batches.endBatch(id, object, now));
    return { batch: this.#o.store.batches.batch(id)!, canceled: true };
  }

  /** Schedules every batch that has not ended; an overdue one ends at once. */
  resume(): void {
    for (const batch of this.#o.store.batches.openBatches()) this.#schedule(batch);
  }

  #schedule(batch: SimBatch): void {
    this.#o.timers.after(`batch:${batch.id}`, batch.endsAt - this.#o.clock.now(), () =>
      this.#finish(batch.id),
    );
  }

  /** Ends the batch by `change` and sends `type`; a batch created without a webhook URL is only read. */
  #end(batch: SimBatch, type: string, change: () => boolean): void {
    const { id, idempotencyKey, webhookUrl } = batch;
    if (webhookUrl === null) this.#o.store.transaction(change);
    else this.#o.jobs.moveWithEvent({ id, idempotencyKey, webhookUrl }, type, {}, change);
  }

  #finish(id: string): void {
    const { store, clock, ids } = this.#o;
    const batch = store.batches.batch(id);
    if (batch === undefined || batch.endedAt !== null) return;
    this.#o.timers.cancel(`batch:${id}`);
    const meta = batch.object.metadata as Record<string, unknown>;
    const scope = typeof meta.longhaul_task === "string" ? meta.longhaul_task : id;
    const failing = idList(meta.sim_fail);
    const expiring = idList(meta.sim_expire);
    const input = store.batches.file(String(batch.object.input_file_id));
    const now = clock.now();
    const emitted = () => {
      let output = "";
      let errors = "";
      const counts = { total: 0, completed: 0, failed: 0 };
      const usage = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
      const line = (customId: string, statusCode: number, body: unknown) =>
        `${JSON.stringify({
          id: ids.next("batch_req"),
          custom_id: customId,
          response: { status_code: statusCode, request_id: ids.next("req"), body },
          error: null,
        })}\n`;
      for (const raw of (input?.bytes.toString("utf8") ?? "").split("\n")) {
        if (raw.trim() === "") continue;
        counts.total++;
        const request = parseLine(raw);
        if (request === null) {
          counts.failed++;
          continue;
        }
        const first = store.batches.firstRun(scope, request.custom_id);
        if (first && expiring.has(request.custom_id)) {
          counts.failed++;
          continue;
        }
        if (first && failing.has(request.custom_id)) {
          counts.failed++;
          errors += line(request.custom_id, 500, {
            error: {
              message: "the simulator failed this request on purpose (sim_fail)",
              type: "server_error",
              code: "server_error",
            },
          });
          continue;
        }
        const parsed = parseModelInput(request.body);
        if (!parsed.ok) {
          counts.failed++;
          errors += line(request.custom_id, 400, {
            error: { message: parsed.message, type: "invalid_request_error", code: "invalid_request" },
          });
          continue;
        }
        const result = runModel(parsed.input);
        const used = {
          input_tokens: result.usage.prompt_tokens,
          output_tokens: result.usage.completion_tokens,
          total_tokens: result.usage.total_tokens,
        };
        usage.input_tokens += used.input_tokens;
        usage.output_tokens += used.output_tokens;
        usage.total_tokens += used.total_tokens;
        if (!result.ok) {
          counts.failed++;
          errors += line(request.custom_id, 500, {
            error: { ...result.error, type: "server_error" },
            usage: used,
          });
          continue;
        }
        counts.completed++;
        const text = "summary" in result.output ? result.output.summary : result.output.text;
        output += line(request.custom_id, 200, {
          id: ids.next("resp"),
          object: "response",
          status: "completed",
          output_text: text,
          output: [{ type: "message", role: "assistant", content: [{ type: "output_text", text }] }],
          usage: used,
        });
      }
      const file = (bytes: string, name: string) => {
        if (bytes === "") return null;
        const f = {
          id: ids.next("file"),
          purpose: "batch_output",
          filename: name,
          bytes: Buffer.from(bytes),
          createdAt: now,
        };
        store.batches.insertFile(f, null);
        return f.id;
      };
      const object = {
        ...batch.object,
        status: "completed",
        output_file_id: file(output, "batch_output.jsonl"),
        error_file_id: file(errors, "batch_errors.jsonl"),
        completed_at: seconds(now),
        request_counts: counts,
        usage,
      };
      return store.batches.endBatch(id, object, now);
    };
    this.#end(batch, "job.succeeded", emitted);
  }
}

/** `sim_fail` / `sim_expire`: an array of custom_ids, or one string of them separated by commas. */
function idList(value: unknown): Set<string> {
  if (Array.isArray(value)) return new Set(value.filter((v): v is string => typeof v === "string"));
  if (typeof value === "string")
    return new Set(
      value
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s !== ""),
    );
  return new Set();
}

function parseLine(raw: string): { custom_id: string; body: unknown } | null {
  try {
    const v = JSON.parse(raw) as { custom_id?: unknown; body?: unknown };
    return typeof v?.custom_id === "string" && v.custom_id !== ""
      ? { custom_id: v.custom_id, body: v.body }
      : null;
  } catch {
    return null;
  }
}

function seconds(ms: number): number {
  return Math.floor(ms / 1000);
}
