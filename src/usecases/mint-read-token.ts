import type { Clock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import { outOfScope, type ReadScope, readTokenTtlS, scopeOpens } from "../core/read-scope.ts";
import type { TaskStore } from "../store/store.ts";
import type { Keyring } from "../tokens/keyring.ts";
import { mintReadToken, verifyReadToken } from "../tokens/read-token.ts";

/**
 * Mints a read token for one of the tenant's tasks or users (`POST /v1/tokens`). A task scope
 * names a task of this tenant (TASK_NOT_FOUND otherwise, so a token never names another
 * tenant's task); a user scope names any user id, including one with no task yet, whose
 * tasks the page will follow. `ttlS` defaults and is bounded by READ_TOKEN_TTL_S.
 */
export async function mintReadTokenFor(
  d: { tasks: TaskStore; keyring: Keyring; clock: Clock },
  m: { tenantId: string; scope: ReadScope; ttlS?: number | undefined },
): Promise<{ token: string; expiresAt: number; scope: ReadScope }> {
  const ttlS = readTokenTtlS(m.ttlS);
  if ("taskId" in m.scope && !(await d.tasks.getTask(m.tenantId, m.scope.taskId))) {
    throw new LonghaulError("TASK_NOT_FOUND", `No task ${m.scope.taskId} for this tenant.`);
  }
  // Whole seconds, as the token holds it.
  const expiresAt = Math.floor(d.clock.now() / 1000 + ttlS) * 1000;
  const token = mintReadToken(d.keyring, { tenantId: m.tenantId, scope: m.scope, expiresAt });
  return { token, expiresAt, scope: m.scope };
}

/** The tenant and scope of a read token (its failures: ../tokens/read-token.ts). */
export function readTokenClaims(d: { keyring: Keyring; clock: Clock }, token: string) {
  return verifyReadToken(d.keyring, token, d.clock.now());
}

/**
 * Checks that a read token opens one task: TOKEN_SCOPE otherwise, the same answer whether
 * the task exists or not, so a token learns nothing about the tasks it does not open.
 */
export async function taskInScope(
  d: { tasks: TaskStore },
  r: { tenantId: string; scope: ReadScope; taskId: string },
): Promise<void> {
  if ("taskId" in r.scope) {
    if (r.scope.taskId !== r.taskId) throw outOfScope(r.taskId);
    return;
  }
  const detail = await d.tasks.getTask(r.tenantId, r.taskId);
  if (!detail || !scopeOpens(r.scope, detail.task)) throw outOfScope(r.taskId);
}
