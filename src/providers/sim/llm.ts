import type { JobUsage } from "../../core/provider-event.ts";

/** A job's input, as the simulator's model reads it. */
export interface ModelInput {
  text?: string;
  document?: string;
  instruction?: "echo" | "summarize";
  /** How long the job runs, in milliseconds. */
  delay_ms?: number;
  /** Truthy: the job fails; a string becomes the failure's message. */
  fail?: boolean | string;
}

export type ModelResult =
  | { ok: true; output: { text: string } | { summary: string }; usage: Required<JobUsage> }
  | { ok: false; error: { code: string; message: string }; usage: Required<JobUsage> };

const SUMMARY_LIMIT = 200;

/**
 * Checks a job input and returns it typed, or a message that says what is wrong. Unknown
 * fields are kept: a real model ignores what it does not read.
 */
export function parseModelInput(
  input: unknown,
): { ok: true; input: ModelInput } | { ok: false; message: string } {
  if (input === undefined || input === null) return { ok: true, input: {} };
  if (typeof input !== "object" || Array.isArray(input))
    return { ok: false, message: "input must be an object" };
  const i = input as Record<string, unknown>;
  for (const field of ["text", "document"] as const) {
    if (i[field] !== undefined && typeof i[field] !== "string") {
      return { ok: false, message: `input.${field} must be a string` };
    }
  }
  if (i.instruction !== undefined && i.instruction !== "echo" && i.instruction !== "summarize") {
    return { ok: false, message: 'input.instruction must be "echo" or "summarize"' };
  }
  const delay = i.delay_ms;
  if (delay !== undefined && !(typeof delay === "number" && Number.isFinite(delay) && delay >= 0)) {
    return { ok: false, message: "input.delay_ms must be a number of milliseconds, 0 or more" };
  }
  if (i.fail !== undefined && typeof i.fail !== "boolean" && typeof i.fail !== "string") {
    return { ok: false, message: "input.fail must be a boolean or a message" };
  }
  return { ok: true, input: i as ModelInput };
}

/**
 * The fake model: echoes `text`, or summarises `document` by extracting its first sentences.
 * Deterministic; usage counts whitespace-separated words, at least one each way.
 */
export function runModel(input: ModelInput): ModelResult {
  const prompt = [input.instruction, input.text, input.document].filter((s) => s !== undefined).join(" ");
  if (input.fail) {
    const message = typeof input.fail === "string" ? input.fail : "the model failed as asked";
    return { ok: false, error: { code: "model_error", message }, usage: usage(prompt, "") };
  }
  const summarize =
    input.instruction === "summarize" || (input.instruction === undefined && input.document !== undefined);
  if (summarize) {
    const summary = `Summary: ${extract(input.document ?? input.text ?? "")}`;
    return { ok: true, output: { summary }, usage: usage(prompt, summary) };
  }
  const text = input.text ?? input.document ?? "";
  return { ok: true, output: { text }, usage: usage(prompt, text) };
}

/** The leading sentences that fit in the limit; a first sentence that does not fit is cut. */
function extract(document: string): string {
  const sentences =
    document
      .replace(/\s+/g, " ")
      .trim()
      .match(/[^.!?]+(?:[.!?]+|$)/g) ?? [];
  let out = "";
  for (const raw of sentences) {
    const sentence = raw.trim();
    const next = out === "" ? sentence : `${out} ${sentence}`;
    if (next.length > SUMMARY_LIMIT) break;
    out = next;
  }
  if (out === "" && sentences.length > 0) out = `${sentences[0]!.trim().slice(0, SUMMARY_LIMIT - 1)}…`;
  return out;
}

function usage(prompt: string, completion: string): Required<JobUsage> {
  const prompt_tokens = words(prompt);
  const completion_tokens = words(completion);
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
}

function words(s: string): number {
  return Math.max(1, s.split(/\s+/).filter((w) => w !== "").length);
}
