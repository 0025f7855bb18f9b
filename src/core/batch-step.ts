import { fail, never, type ReplayRun } from "./replay-run.ts";
import type {
  BatchItem,
  BatchItemStatus,
  BatchOptions,
  BatchRequest,
  BatchResult,
  JobOptions,
  StepApi,
} from "./task-type.ts";

/** The most resubmission rounds one `step.batch` may ask for. */
export const MAX_BATCH_ROUNDS = 10;

const statuses: ReadonlySet<string> = new Set<BatchItemStatus>(["succeeded", "failed", "expired"]);

/** The step id of a resubmission round: round 0 is the batch's own id. */
export function batchRoundStepId(id: string, round: number): string {
  return round === 0 ? id : `${id}:round-${round}`;
}

/**
 * `step.batch`: a provider batch job whose result is its items, then, with `resubmit`, a
 * smaller batch of only the failed or expired requests per round, each an ordinary
 * `step.job` (`<id>`, `<id>:round-1`, …), so every round is durable and replays like any
 * job. The answers are merged in the order of `requests`; a request keeps the answer of the
 * last round that ran it.
 */
export async function batchStep<T>(
  run: ReplayRun,
  step: StepApi,
  id: string,
  options: BatchOptions,
): Promise<BatchResult<T>> {
  const problem = batchProblem(options);
  if (problem !== null) {
    run.halt(fail("VALIDATION_FAILED", `step.batch("${id}"): ${problem}.`));
    return never();
  }
  const maxRounds = options.resubmit?.maxRounds ?? 0;
  const retryOn = new Set<string>(options.resubmit?.on ?? ["failed", "expired"]);
  const byId = new Map<string, BatchItem<T>>();
  let pending: BatchRequest[] = options.requests;
  let rounds = 0;
  for (let round = 0; round <= maxRounds && pending.length > 0; round++) {
    const stepId = batchRoundStepId(id, round);
    const output = await step.job<unknown>(stepId, roundJob(options, pending));
    const items = roundItems<T>(output, pending, round);
    if (typeof items === "string") {
      run.halt(fail("PROVIDER_RESULT_INVALID", `step.batch("${id}"), job ${stepId}: ${items}.`));
      return never();
    }
    for (const item of items) byId.set(item.custom_id, item);
    rounds = round + 1;
    pending = pending.filter((r) => retryOn.has(byId.get(r.custom_id)?.status ?? ""));
  }
  const ordered = options.requests.map((r) => byId.get(r.custom_id) as BatchItem<T>);
  return { items: ordered, rounds, counts: countOf(ordered), usage: usageOf(ordered) };
}

function roundJob(options: BatchOptions, requests: BatchRequest[]): JobOptions {
  const input: Record<string, unknown> = {
    kind: "batch",
    endpoint: options.endpoint,
    requests,
    ...(options.completionWindow === undefined ? {} : { completion_window: options.completionWindow }),
    ...(options.metadata === undefined ? {} : { metadata: options.metadata }),
  };
  return {
    provider: options.provider,
    input,
    ...(options.timeout === undefined ? {} : { timeout: options.timeout }),
    ...(options.pollAfter === undefined ? {} : { pollAfter: options.pollAfter }),
    ...(options.maxTokens === undefined ? {} : { maxTokens: options.maxTokens }),
  };
}

/** The options' first problem, or null. */
export function batchProblem(o: BatchOptions): string | null {
  if (!o || typeof o !== "object") return "needs options";
  if (typeof o.provider !== "string" || o.provider === "") return "needs a provider name";
  if (typeof o.endpoint !== "string" || !o.endpoint.startsWith("/")) {
    return 'needs endpoint, a path such as "/v1/responses"';
  }
  if (!Array.isArray(o.requests) || o.requests.length === 0) return "needs at least one request";
  const seen = new Set<string>();
  for (const [i, r] of o.requests.entries()) {
    if (!r || typeof r !== "object") return `requests[${i}] must be an object`;
    if (typeof r.custom_id !== "string" || r.custom_id === "") {
      return `requests[${i}].custom_id must be a non-empty string`;
    }
    if (seen.has(r.custom_id)) return `requests[${i}].custom_id "${r.custom_id}" is used twice`;
    seen.add(r.custom_id);
    if (r.body === undefined) return `requests[${i}] needs a body`;
  }
  const re = o.resubmit;
  if (re !== undefined) {
    if (!re || typeof re !== "object") return "resubmit must be {maxRounds, on?}";
    const n = re.maxRounds;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 0 || n > MAX_BATCH_ROUNDS) {
      return `resubmit.maxRounds must be a whole number from 0 to ${MAX_BATCH_ROUNDS}`;
    }
    if (re.on !== undefined) {
      if (!Array.isArray(re.on) || re.on.some((s) => s !== "failed" && s !== "expired")) {
        return 'resubmit.on must list "failed" and/or "expired"';
      }
    }
  }
  return null;
}

/** A round's job output as items, one per request sent, or what is wrong with it. */
function roundItems<T>(output: unknown, sent: BatchRequest[], round: number): BatchItem<T>[] | string {
  const list = output && typeof output === "object" ? (output as { items?: unknown }).items : undefined;
  if (!Array.isArray(list)) {
    return "the job's output has no items; the provider does not report batches request by request";
  }
  const wanted = new Set(sent.map((r) => r.custom_id));
  const items: BatchItem<T>[] = [];
  for (const [i, raw] of list.entries()) {
    if (!raw || typeof raw !== "object") return `items[${i}] is not an object`;
    const it = raw as Record<string, unknown>;
    if (typeof it.custom_id !== "string" || !wanted.has(it.custom_id)) {
      return `items[${i}] names custom_id ${JSON.stringify(it.custom_id)}, which this round did not send`;
    }
    if (typeof it.status !== "string" || !statuses.has(it.status)) {
      return `items[${i}] has status ${JSON.stringify(it.status)}`;
    }
    wanted.delete(it.custom_id);
    items.push({ ...(it as unknown as BatchItem<T>), round });
  }
  if (wanted.size > 0) return `${wanted.size} request(s) have no item, e.g. "${[...wanted][0]}"`;
  return items;
}

function countOf(items: BatchItem[]): Record<BatchItemStatus, number> {
  const counts = { succeeded: 0, failed: 0, expired: 0 };
  for (const it of items) counts[it.status]++;
  return counts;
}

function usageOf(items: BatchItem[]): BatchResult["usage"] {
  const sum = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
  for (const { usage } of items) {
    if (!usage) continue;
    sum.input_tokens += usage.input_tokens ?? 0;
    sum.output_tokens += usage.output_tokens ?? 0;
    sum.total_tokens += usage.total_tokens ?? (usage.input_tokens ?? 0) + (usage.output_tokens ?? 0);
  }
  return sum;
}
