import type { FastifyInstance } from "fastify";
import { LonghaulError } from "../core/errors.ts";
import type { Store } from "../store/store.ts";

/** `POST /v1/signals {name, data?, id?}`: ends every `step.waitForEvent` of this tenant that it matches. */
export function signalsRoutes(app: FastifyInstance, store: Store): void {
  app.post("/v1/signals", async (req, reply) => {
    const b = req.body as Record<string, unknown> | null;
    if (typeof b !== "object" || b === null || Array.isArray(b)) {
      throw new LonghaulError(
        "VALIDATION_FAILED",
        'Send a JSON object such as {"name": "invoice.paid", "data": {...}}.',
      );
    }
    if (
      typeof b.name !== "string" ||
      b.name.length === 0 ||
      b.name.length > 200 ||
      b.name.includes("\u0000")
    ) {
      throw new LonghaulError("VALIDATION_FAILED", '"name" must be a string of 1 to 200 characters.');
    }
    if (
      b.id !== undefined &&
      (typeof b.id !== "string" || b.id.length === 0 || b.id.length > 255 || b.id.includes("\u0000"))
    ) {
      throw new LonghaulError(
        "VALIDATION_FAILED",
        '"id" must be a string of 1 to 255 characters; it makes the signal idempotent.',
      );
    }
    const r = await store.recordSignal({
      tenantId: req.tenant.id,
      name: b.name,
      data: b.data ?? null,
      clientId: (b.id as string | undefined) ?? null,
    });
    return reply
      .status(r.duplicate ? 200 : 202)
      .send({ signal_id: r.id, duplicate: r.duplicate, matched: r.matched });
  });
}
