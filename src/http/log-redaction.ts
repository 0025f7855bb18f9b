import type { FastifyReply, FastifyRequest } from "fastify";
import { type LoggerOptions, stdSerializers } from "pino";

/*
 * Nothing that grants access is written to the log: capability tokens travel in the path of
 * callback and approval URLs, keys in headers. Every request logged goes through these
 * serializers, whichever pino instance the deployment was given; they log no headers at all,
 * and `redactPaths` blanks the secret ones wherever other code logs headers of its own.
 */

export const REDACTED = "[redacted]";

// The token segment of a capability URL, wherever it appears (a path, a full URL, a message).
const CAPABILITY_PATH = /(\/v1\/(?:callbacks|approvals)\/)[^/?#\s"'<>]+/g;
// A read token in a query (`?token=`), as browsers send it to the event streams.
const TOKEN_QUERY = /([?&]token=)[^&#\s"'<>]+/g;
/** `text` with the token of every capability URL, and every `token=` query value, replaced by `[redacted]`. */
export const redactCapabilityUrls = (text: string): string =>
  text.replace(CAPABILITY_PATH, `$1${REDACTED}`).replace(TOKEN_QUERY, `$1${REDACTED}`);

/** The serializers of every HTTP log line (`req`, `res`, `err`). */
export const safeSerializers = {
  req(req: FastifyRequest) {
    return {
      method: req.method,
      url: typeof req.url === "string" ? redactCapabilityUrls(req.url) : undefined,
      host: req.host,
      remoteAddress: req.ip,
      remotePort: req.socket?.remotePort,
      // No headers: they carry keys, cookies and signatures.
    };
  },
  res(reply: FastifyReply) {
    return { statusCode: reply.statusCode };
  },
  err(err: Error) {
    const out = stdSerializers.err(err) as Record<string, unknown>;
    for (const [k, v] of Object.entries(out)) if (typeof v === "string") out[k] = redactCapabilityUrls(v);
    return out;
  },
};

/** Paths pino blanks wherever code logs headers of its own. */
export const redactPaths = [
  "headers.authorization",
  "headers.cookie",
  'headers["set-cookie"]',
  'headers["x-api-key"]',
  'headers["x-goog-api-key"]',
  "*.headers.authorization",
  "*.headers.cookie",
  '*.headers["set-cookie"]',
  '*.headers["x-api-key"]',
  '*.headers["x-goog-api-key"]',
];

/** Options for a pino instance that logs nothing secret (used when longhaul makes its own logger). */
export function safeLoggerOptions(level: string): LoggerOptions {
  return {
    level,
    serializers: safeSerializers as LoggerOptions["serializers"],
    redact: { paths: redactPaths, censor: REDACTED },
    hooks: {
      // Messages and string fields built from a URL lose its token too.
      logMethod(args, method) {
        const clean = args.map((a) => (typeof a === "string" ? redactCapabilityUrls(a) : a));
        method.apply(this, clean as Parameters<typeof method>);
      },
    },
  };
}
