import type { WaitStore } from "../store/store.ts";
import { sendSignal } from "../usecases/send-signal.ts";
import { SignalBody, SignalResult } from "../wire/events.ts";
import type { Api } from "./api.ts";
import { operation } from "./openapi.ts";

/** `POST /v1/signals {name, data?, id?}`: ends every `step.waitForEvent` of this tenant that it matches. */
export function signalsRoutes(app: Api, store: WaitStore): void {
  app.post(
    "/v1/signals",
    {
      schema: operation("Send a signal that ends matching waitForEvent steps", {
        body: SignalBody,
        response: { 200: SignalResult, 202: SignalResult },
      }),
    },
    async (req, reply) => {
      const b = req.body;
      const r = await sendSignal(
        { waits: store },
        { tenantId: req.tenant.id, name: b.name, data: b.data, clientId: b.id ?? null },
      );
      return reply
        .status(r.duplicate ? 200 : 202)
        .send({ signal_id: r.id, duplicate: r.duplicate, matched: r.matched });
    },
  );
}
