import type { FastifyInstance } from "fastify";
import type { Clock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import type { Source } from "../ingress/sources.ts";
import type { Store } from "../store/store.ts";
import type { Keyring } from "../tokens/keyring.ts";
import { verifyToken } from "../tokens/token.ts";
import { refuseWait } from "./wait-answer.ts";

const MAX_BODY = 1024 * 1024;

/**
 * `POST /v1/callbacks/:token`: the capability URL a `step.callback` handed out. The token
 * is checked before anything is read from the store (shape, key, MAC, expiry); then the
 * store ends the step only if it still waits with the token's attempt (ARCHITECTURE §4.5).
 */
export function callbacksRoutes(
  app: FastifyInstance,
  d: { store: Store; keyring: Keyring; clock: Clock; sources: Map<string, Source> },
): void {
  app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: MAX_BODY }, (_req, body, done) =>
      done(null, body),
    );

    scope.post<{ Params: { token: string } }>("/v1/callbacks/:token", async (req, reply) => {
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
        try {
          output = JSON.parse(body.toString("utf8"));
        } catch {
          throw new LonghaulError("INVALID_JSON", "Post the step's result as JSON.");
        }
      }
      const answer = await d.store.completeCallback({
        tenantId: claims.tenantId,
        taskId: claims.taskId,
        stepId: claims.stepId,
        attempt: claims.attempt,
        output,
        body,
      });
      if (answer !== "accepted") refuseWait(answer, claims.stepId);
      return reply.status(200).send({ accepted: true, task_id: claims.taskId, step_id: claims.stepId });
    });
  });
}
