import type { Clock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import { readJson } from "../core/json-input.ts";
import type { Source } from "../ingress/sources.ts";
import type { WaitStore } from "../store/store.ts";
import type { Keyring } from "../tokens/keyring.ts";
import { verifyToken } from "../tokens/token.ts";
import { CallbackResult, TokenParams } from "../wire/approvals.ts";
import type { Api } from "./api.ts";
import { operation } from "./openapi.ts";
import { refuseWait } from "./wait-answer.ts";

const MAX_BODY = 1024 * 1024;

/**
 * `POST /v1/callbacks/:token`: the capability URL a `step.callback` handed out. The token
 * is checked before anything is read from the store (shape, key, MAC, expiry); then the
 * store ends the step only if it still waits with the token's attempt (ARCHITECTURE §4.5).
 */
export function callbacksRoutes(
  app: Api,
  d: { store: WaitStore; keyring: Keyring; clock: Clock; sources: Map<string, Source> },
): void {
  app.register(async (scope: Api) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: MAX_BODY }, (_req, body, done) =>
      done(null, body),
    );

    // The body is the step's result as raw bytes, read as JSON only after the sender is verified.
    const schema = operation(
      "A capability callback URL; the body is the step's result. The same body again answers 200 with duplicate: true",
      { security: [], params: TokenParams, response: { 200: CallbackResult } },
    );
    scope.post("/v1/callbacks/:token", { schema }, async (req, reply) => {
      const claims = verifyToken(d.keyring, req.params.token, d.clock.now());
      if (claims.purpose !== "callback") {
        throw new LonghaulError(
          "FORBIDDEN",
          "This link is for an approval; open it with GET /v1/approvals/:token.",
        );
      }
      const found = await d.store.stepForToken(claims.tenantId, claims.taskId, claims.stepId);
      if (!found) throw new LonghaulError("TASK_NOT_FOUND", "The task of this link no longer exists.");
      const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const verifySource = (found.step.config as { verify_source?: string | null } | null)?.verify_source;
      if (verifySource) {
        const source = d.sources.get(verifySource);
        if (!source)
          throw new LonghaulError(
            "SOURCE_NOT_FOUND",
            `The callback asks for source "${verifySource}", which is not configured.`,
          );
        await source.verifier.verify({ headers: req.headers, body, nowMs: d.clock.now() });
      }
      let output: unknown = null;
      if (body.length > 0) {
        const read = readJson(body.toString("utf8"));
        if (!read.ok) {
          if (read.error.code !== "INVALID_JSON") throw read.error;
          throw new LonghaulError("INVALID_JSON", `${read.error.message} Post the step's result as JSON.`);
        }
        output = read.value;
      }
      const answer = await d.store.completeCallback({
        tenantId: claims.tenantId,
        taskId: claims.taskId,
        stepId: claims.stepId,
        attempt: claims.attempt,
        output,
        body,
      });
      // The same body again after it completed the step: a sender retrying gets the same answer.
      if (answer === "duplicate") {
        return reply
          .status(200)
          .send({ accepted: true, task_id: claims.taskId, step_id: claims.stepId, duplicate: true });
      }
      if (answer !== "accepted") refuseWait(answer, claims.stepId);
      return reply.status(200).send({ accepted: true, task_id: claims.taskId, step_id: claims.stepId });
    });
  });
}
