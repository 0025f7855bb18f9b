import { signalAction } from "../actions/signals.ts";
import type { WaitStore } from "../store/store.ts";
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
      const r = await signalAction({ store }, req.tenant.id, req.body);
      return reply.status(r.status).send(r.body);
    },
  );
}
