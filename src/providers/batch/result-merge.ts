import { LonghaulError } from "../../core/errors.ts";
import type { JobUsage } from "../../core/provider-event.ts";
import { jsonlLines } from "./jsonl-lines.ts";

/** Token counts of one request, in the Batch API's words (`step.batch`'s items). */
export interface ItemUsage {
  input_tokens?: number;
  output_tokens?: number;
  total_tokens?: number;
}

/** One request's answer, as `step.batch` reads a round's items. */
export interface ResultItem {
  custom_id: string;
  status: "succeeded" | "failed" | "expired";
  output?: unknown;
  error?: { code: string; message: string };
  usage?: ItemUsage;
}

/** Reads one parsed line of a result file as an item, or says what is wrong with it. */
export type LineReader = (value: unknown) => ResultItem | string;

/** A result file to merge: its name in error messages, its bytes and how its lines read. */
export interface ResultSource {
  name: string;
  bytes: AsyncIterable<Uint8Array>;
  read: LineReader;
}

/** What a request named in no result file is: the batch ended without running it. */
const NOT_RUN = { code: "batch_expired", message: "the batch ended without running this request" };

/**
 * Merges a batch's result files line by line into one item per request, in the order of
 * `order` (the custom_ids the batch sent). A request no file names is `expired`. With no
 * `order` (a service that writes its answers in the order of the requests and does not say
 * what they were), the items are the lines, in their order. The job's
 * usage is the items' sum. A line that is not JSON, that its reader refuses, that names a
 * custom_id the batch did not send or one already answered throws `PROVIDER_RESULT_INVALID`
 * naming the file and the line.
 */
export async function mergeResults(
  order: readonly string[] | null,
  sources: readonly ResultSource[],
): Promise<{ items: ResultItem[]; usage: JobUsage }> {
  const answers = new Map<string, ResultItem | null>();
  for (const id of order ?? []) answers.set(id, null);
  for (const source of sources) {
    for await (const { line, n } of jsonlLines(source.bytes)) {
      const invalid = (why: string) =>
        new LonghaulError("PROVIDER_RESULT_INVALID", `The batch's ${source.name}, line ${n}: ${why}.`, {
          details: { file: source.name, line: n },
        });
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        throw invalid("not JSON, so the file is not JSON Lines");
      }
      const item = source.read(value);
      if (typeof item === "string") throw invalid(item);
      const known = answers.get(item.custom_id);
      if (known === undefined && order !== null) {
        throw invalid(`names custom_id ${JSON.stringify(item.custom_id)}, which the batch did not send`);
      }
      if (known !== null && known !== undefined) {
        throw invalid(`answers custom_id ${JSON.stringify(item.custom_id)} a second time`);
      }
      answers.set(item.custom_id, item);
    }
  }
  if (order === null) {
    const items = [...answers.values()] as ResultItem[];
    return { items, usage: usageSum(items) };
  }
  const items = order.map(
    (custom_id) => answers.get(custom_id) ?? { custom_id, status: "expired" as const, error: NOT_RUN },
  );
  return { items, usage: usageSum(items) };
}

/** The items' usage summed, as the engine counts a job's tokens. */
export function usageSum(items: readonly ResultItem[]): JobUsage {
  let prompt = 0;
  let completion = 0;
  let total = 0;
  for (const { usage } of items) {
    if (!usage) continue;
    prompt += usage.input_tokens ?? 0;
    completion += usage.output_tokens ?? 0;
    total += usage.total_tokens ?? (usage.input_tokens ?? 0) + (usage.output_tokens ?? 0);
  }
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: total };
}

/**
 * `{input_tokens|prompt_tokens, output_tokens|completion_tokens, total_tokens}` (the Responses
 * and Chat Completions APIs name them differently) as an item's usage; undefined when none.
 */
export function itemUsage(value: unknown): ItemUsage | undefined {
  if (!value || typeof value !== "object") return undefined;
  const v = value as Record<string, unknown>;
  const count = (...names: string[]) => {
    for (const name of names) {
      const n = v[name];
      if (typeof n === "number" && Number.isFinite(n) && n >= 0) return n;
    }
    return undefined;
  };
  const usage: ItemUsage = {};
  const input = count("input_tokens", "prompt_tokens", "promptTokenCount");
  const output = count("output_tokens", "completion_tokens", "candidatesTokenCount");
  const total = count("total_tokens", "totalTokenCount");
  if (input !== undefined) usage.input_tokens = input;
  if (output !== undefined) usage.output_tokens = output;
  if (total !== undefined) usage.total_tokens = total;
  return Object.keys(usage).length > 0 ? usage : undefined;
}

/** The custom_ids of a batch input file (`{custom_id, …}` per line), in its order. */
export async function inputOrder(name: string, bytes: AsyncIterable<Uint8Array>): Promise<string[]> {
  const ids: string[] = [];
  for await (const { line, n } of jsonlLines(bytes)) {
    let id: unknown;
    try {
      id = (JSON.parse(line) as { custom_id?: unknown })?.custom_id;
    } catch {
      id = undefined;
    }
    if (typeof id !== "string" || id === "") {
      throw new LonghaulError("PROVIDER_RESULT_INVALID", `The batch's ${name}, line ${n}: no custom_id.`, {
        details: { file: name, line: n },
      });
    }
    ids.push(id);
  }
  return ids;
}
