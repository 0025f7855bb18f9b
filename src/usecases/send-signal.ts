import type { WaitStore } from "../store/store.ts";

export interface SendSignalInput {
  tenantId: string;
  name: string;
  data?: unknown;
  /** The sender's id for the signal: the same id again is a duplicate and matches nothing new. */
  clientId?: string | null;
}

/**
 * Sends a signal: every `step.waitForEvent` of the tenant that it matches ends with its data, in
 * one store transaction; waits that start later still see it until it is pruned.
 */
export function sendSignal(
  d: { waits: WaitStore },
  s: SendSignalInput,
): Promise<{ id: string; duplicate: boolean; matched: number }> {
  return d.waits.recordSignal({
    tenantId: s.tenantId,
    name: s.name,
    data: s.data ?? null,
    clientId: s.clientId ?? null,
  });
}
