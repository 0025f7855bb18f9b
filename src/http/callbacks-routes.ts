import type { Clock } from "../core/clock.ts";
import type { Source } from "../ingress/sources.ts";
import type { WaitStore } from "../store/store.ts";
import type { Keyring } from "../tokens/keyring.ts";
import { completeCallback } from "../usecases/complete-callback.ts";
import { CallbackResult, TokenParams } from "../wire/approvals.ts";
import type { Api } from "./api.ts";
import { operation } from "./openapi.ts";

const MAX_BODY = 1024 * 1024;

/**
 * `POST /v1/callbacks/:token`: the capability URL a `step.callback` handed out. The body is
 * kept as raw bytes so a source signature can be checked on them; `completeCallback` does
 * the rest (ARCHITECTURE §4.5).
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
      const r = await completeCallback(
        { waits: d.store, keyring: d.keyring, clock: d.clock, sources: d.sources },
        {
          token: req.params.token,
          headers: req.headers,
          body: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0),
        },
      );
      // The same body again after it completed the step: a sender retrying gets the same answer.
      const answer = { accepted: true as const, task_id: r.taskId, step_id: r.stepId };
      return reply.status(200).send(r.duplicate ? { ...answer, duplicate: true } : answer);
    });
  });
}
