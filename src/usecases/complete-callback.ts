import type { Clock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import { readJson } from "../core/json-input.ts";
import type { Source } from "../ingress/sources.ts";
import type { WaitStore } from "../store/store.ts";
import type { Keyring } from "../tokens/keyring.ts";
import { verifyToken } from "../tokens/token.ts";
import { refuseWait } from "./refuse-wait.ts";

export interface CompleteCallbackInput {
  token: string;
  /** The request's headers, for a step that asks its sender to sign with a configured source. */
  headers: Record<string, string | string[] | undefined>;
  /** The raw body: the step's result as JSON, or empty for null. */
  body: Buffer;
}

export interface CompleteCallbackResult {
  taskId: string;
  stepId: string;
  /** True when the same body already completed the step: a retrying sender gets the same answer. */
  duplicate: boolean;
}

/**
 * Completes a `step.callback` through its capability URL. The token is checked before anything
 * is read from the store (shape, key, MAC, expiry); a step with `verify_source` also needs the
 * source's signature on the raw bytes; the body is read as JSON only after that. The store ends
 * the step only if it still waits with the token's attempt (ARCHITECTURE §4.5); any other answer
 * is its error (409 used, 410 expired or canceled).
 */
export async function completeCallback(
  d: { waits: WaitStore; keyring: Keyring; clock: Clock; sources: ReadonlyMap<string, Source> },
  c: CompleteCallbackInput,
): Promise<CompleteCallbackResult> {
  const claims = verifyToken(d.keyring, c.token, d.clock.now());
  if (claims.purpose !== "callback") {
    throw new LonghaulError(
      "FORBIDDEN",
      "This link is for an approval; open it with GET /v1/approvals/:token.",
    );
  }
  const found = await d.waits.stepForToken(claims.tenantId, claims.taskId, claims.stepId);
  if (!found) throw new LonghaulError("TASK_NOT_FOUND", "The task of this link no longer exists.");
  const verifySource = (found.step.config as { verify_source?: string | null } | null)?.verify_source;
  if (verifySource) {
    const source = d.sources.get(verifySource);
    if (!source)
      throw new LonghaulError(
        "SOURCE_NOT_FOUND",
        `The callback asks for source "${verifySource}", which is not configured.`,
      );
    await source.verifier.verify({ headers: c.headers, body: c.body, nowMs: d.clock.now() });
  }
  let output: unknown = null;
  if (c.body.length > 0) {
    const read = readJson(c.body.toString("utf8"));
    if (!read.ok) {
      if (read.error.code !== "INVALID_JSON") throw read.error;
      throw new LonghaulError("INVALID_JSON", `${read.error.message} Post the step's result as JSON.`);
    }
    output = read.value;
  }
  const answer = await d.waits.completeCallback({
    tenantId: claims.tenantId,
    taskId: claims.taskId,
    stepId: claims.stepId,
    attempt: claims.attempt,
    output,
    body: c.body,
  });
  if (answer === "duplicate") return { taskId: claims.taskId, stepId: claims.stepId, duplicate: true };
  if (answer !== "accepted") refuseWait(answer, claims.stepId);
  return { taskId: claims.taskId, stepId: claims.stepId, duplicate: false };
}
