import type { Static } from "typebox";
import type { WaitStore } from "../store/store.ts";
import { sendSignal } from "../usecases/send-signal.ts";
import type { SignalBody, SignalResult } from "../wire/events.ts";

/**
 * `POST /v1/signals` without its transport: ends every `step.waitForEvent` of the tenant that
 * the signal matches. 202 for a new signal, 200 for a resend of one with the same `id`.
 */
export async function signalAction(
  d: { store: WaitStore },
  tenantId: string,
  body: Static<typeof SignalBody>,
): Promise<{ status: 200 | 202; body: Static<typeof SignalResult> }> {
  const r = await sendSignal(
    { waits: d.store },
    { tenantId, name: body.name, data: body.data, clientId: body.id ?? null },
  );
  return {
    status: r.duplicate ? 200 : 202,
    body: { signal_id: r.id, duplicate: r.duplicate, matched: r.matched },
  };
}
