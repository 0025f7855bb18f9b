import { json } from "../json.ts";
import type { Ctx } from "./db.ts";
import { fanOut } from "./fan-out.ts";

/**
 * Appends to the tenant's task event log (in the caller's transaction), with the outbound
 * deliveries it owes, and notes it to be announced once the transaction commits.
 */
export function emit(c: Ctx, tenantId: string, taskId: string, type: string, data: unknown): void {
  const { lastInsertRowid } = c.sql.run(
    "INSERT INTO task_events (tenant_id, task_id, type, data, created_at) VALUES (?, ?, ?, ?, ?)",
    tenantId,
    taskId,
    type,
    json(data),
    c.clock.now(),
  );
  const seq = Number(lastInsertRowid);
  c.appended ??= [];
  c.appended.push([tenantId, seq]);
  fanOut(c, tenantId, taskId, seq, type);
}
