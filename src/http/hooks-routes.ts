import { createHash } from "node:crypto";
import type { FastifyInstance } from "fastify";
import type { Clock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import type { Source } from "../ingress/sources.ts";
import type { Store } from "../store/store.ts";

const MAX_BODY = 16 * 1024 * 1024;

/**
 * `POST /hooks/:source`: verify the raw bytes, record the event and its work item in one
 * transaction, answer. Nothing else happens on this path (DESIGN §2): the worker applies it.
 */
export function hooksRoutes(
  app: FastifyInstance,
  store: Store,
  sources: Map<string, Source>,
  clock: Clock,
): void {
  app.register(async (scope) => {
    // Raw bytes for every content type: verification must see exactly what was signed.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: MAX_BODY }, (_req, body, done) =>
      done(null, body),
    );

    scope.post<{ Params: { source: string } }>("/hooks/:source", async (req, reply) => {
      const source = sources.get(req.params.source);
      if (!source)
        throw new LonghaulError(
          "SOURCE_NOT_FOUND",
          `No webhook source "${req.params.source}" is configured.`,
        );
      const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      if (body.length > source.bodyLimit) {
        throw new LonghaulError(
          "PAYLOAD_TOO_LARGE",
          `Source "${source.name}" accepts bodies up to ${source.bodyLimit} bytes.`,
        );
      }
      const verified = source.scheme.verify({
        headers: req.headers,
        body,
        secrets: source.secrets,
        toleranceS: source.toleranceS,
        nowMs: clock.now(),
      });
      try {
        JSON.parse(body.toString("utf8"));
      } catch {
        throw new LonghaulError("INVALID_JSON", "The signature is valid but the body is not JSON.");
      }
      const eventId = verified.eventId ?? `sha256:${createHash("sha256").update(body).digest("hex")}`;
      const r = await store.recordEvent({ source: source.name, provider: source.provider, eventId, body });
      return reply.status(200).send({ received: true, duplicate: r.duplicate });
    });
  });
}
