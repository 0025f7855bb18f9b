import { type Readable, Transform } from "node:stream";
import { Type } from "typebox";
import { declaredTooLarge, tooLarge, webhookAction, webhookRefused } from "../actions/webhooks.ts";
import type { Clock } from "../core/clock.ts";
import type { Source } from "../ingress/sources.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { InboxStore, WebhookRefusalStore } from "../store/store.ts";
import { sourceNamed } from "../usecases/record-webhook.ts";
import { HookReceipt } from "../wire/events.ts";
import type { Api } from "./api.ts";
import { errorResponse } from "./error-handler.ts";
import { operation } from "./openapi.ts";

/**
 * `POST /hooks/:source`: hands the raw bytes to `recordWebhook` (verify, record the event and
 * its work item in one transaction) and answers. The worker applies it (ARCHITECTURE §2).
 * An unknown source (404) and a body over the source's limit (413) are refused before the
 * body is read; a chunked body is cut off as soon as it grows past the limit.
 */
export function hooksRoutes(
  app: Api,
  store: InboxStore & WebhookRefusalStore,
  sources: Map<string, Source>,
  clock: Clock,
  metrics?: Metrics,
): void {
  // Each source enforces its own limit in preParsing; the parser's is only the largest of them.
  const largest = Math.max(1, ...[...sources.values()].map((s) => s.bodyLimit));

  app.register(async (scope: Api) => {
    // Raw bytes for every content type: verification must see exactly what was signed.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: largest }, (_req, body, done) =>
      done(null, body),
    );

    // A refusal of a configured source's webhook (the rate limit and 413 included) is counted
    // and logged as on the path ahead of the router.
    scope.addHook("onError", async (req, _reply, err) => {
      const name = (req.params as { source?: string }).source;
      if (name === undefined || !sources.has(name)) return;
      const r = errorResponse(err, req.id);
      webhookRefused(
        { refusals: store, clock, metrics, log: req.log },
        {
          source: name,
          status: r.status,
          code: r.body.error.code,
          requestId: req.id,
          remoteAddress: req.ip ?? null,
        },
      );
    });

    scope.addHook("preParsing", async (req, _reply, payload) => {
      const source = sourceNamed(sources, (req.params as { source: string }).source);
      const declared = req.headers["content-length"];
      if (declared === undefined) return capped(payload, source);
      if (declaredTooLarge(source, declared)) throw tooLarge(source);
      // Node reads no more than Content-Length says, so the declared size is the bound.
      return payload;
    });

    // The body is raw bytes: verified on exactly what was sent, so it has no schema here.
    const schema = operation("Webhook ingress: verified on the raw bytes, recorded once", {
      security: [],
      params: Type.Object({ source: Type.String() }),
      response: { 200: HookReceipt },
    });
    scope.post("/hooks/:source", { schema }, async (req, reply) => {
      const answer = await webhookAction(
        { inbox: store, clock, sources, metrics, log: req.log },
        {
          source: req.params.source,
          headers: req.headers,
          body: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0),
        },
      );
      return reply.status(200).send(answer);
    });
  });
}

/** The body stream, failing with 413 once more than the source's limit has come. */
function capped(payload: Readable, source: Source): Readable {
  let received = 0;
  return payload.pipe(
    new Transform({
      transform(chunk: Buffer, _encoding, done) {
        received += chunk.length;
        if (received > source.bodyLimit) done(tooLarge(source));
        else done(null, chunk);
      },
    }),
  );
}
