import type { Clock } from "../core/clock.ts";
import type { ReadScope } from "../core/read-scope.ts";
import type { TaskStore } from "../store/store.ts";
import type { Keyring } from "../tokens/keyring.ts";
import { mintReadTokenFor } from "../usecases/mint-read-token.ts";
import { ReadTokenBody, ReadTokenResult } from "../wire/tokens.ts";
import type { Api } from "./api.ts";
import { operation } from "./openapi.ts";

/**
 * `POST /v1/tokens {scope: {task_id} | {user_id}, ttl?}`: a short-lived read token, minted by
 * the tenant's backend with its API key and handed to a browser, which then reads that task
 * (or that user's tasks) and follows its events with it, and nothing else.
 */
export function tokensRoutes(app: Api, d: { store: TaskStore; keyring: Keyring; clock: Clock }): void {
  const schema = operation("Mint a read token for one task or one user's tasks (API key only)", {
    body: ReadTokenBody,
    response: { 201: ReadTokenResult },
  });
  app.post("/v1/tokens", { schema }, async (req, reply) => {
    const s = req.body.scope;
    const scope: ReadScope = "task_id" in s ? { taskId: s.task_id } : { userId: s.user_id };
    const r = await mintReadTokenFor(
      { tasks: d.store, keyring: d.keyring, clock: d.clock },
      { tenantId: req.tenant.id, scope, ttlS: req.body.ttl },
    );
    // A token is a credential: no cache may keep the answer.
    reply.header("cache-control", "no-store");
    return reply.status(201).send({
      token: r.token,
      expires_at: new Date(r.expiresAt).toISOString(),
      scope: "taskId" in r.scope ? { task_id: r.scope.taskId } : { user_id: r.scope.userId },
    });
  });
}
