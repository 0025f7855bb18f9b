import type { FastifyError, FastifyInstance, FastifyReply, FastifySchemaValidationError } from "fastify";
import { type ErrorCode, LonghaulError } from "../core/errors.ts";
import { errorStatus } from "./error-status.ts";
import { REQUEST_ID_HEADER } from "./request-id.ts";

/** Fastify's own failures mapped onto our stable codes, so bad input never gets a 5xx. */
const fastifyCodes: Record<string, [ErrorCode, string]> = {
  FST_ERR_CTP_INVALID_JSON_BODY: ["INVALID_JSON", "The body is not valid JSON."],
  FST_ERR_CTP_EMPTY_JSON_BODY: ["INVALID_JSON", "The body is empty; send a JSON object."],
  FST_ERR_CTP_BODY_TOO_LARGE: ["PAYLOAD_TOO_LARGE", "The body is larger than this endpoint accepts."],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: ["UNSUPPORTED_MEDIA_TYPE", "Send the body as application/json."],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: ["BAD_REQUEST", "The Content-Length header does not match the body."],
  FST_ERR_VALIDATION: ["VALIDATION_FAILED", "The request is not valid."],
  // Refused by the router before any route or hook runs (Fastify's `frameworkErrors`).
  FST_ERR_BAD_URL: [
    "BAD_REQUEST",
    "The URL path is not valid: each % must be followed by two hexadecimal digits.",
  ],
  FST_ERR_MAX_PARAM_LENGTH: [
    "URL_TOO_LONG",
    "A segment of the URL path is longer than this server accepts (2,100 characters).",
  ],
};

/** What a 500 says: nothing about the cause, which goes to the log. */
const INTERNAL_MESSAGE = "Something went wrong on our side; the request can be retried.";

/**
 * Fastify's `frameworkErrors`: what the router refuses before any route or hook runs (a broken
 * percent-encoding, a path segment over `maxParamLength`) leaves in our error shape too.
 */
export function frameworkErrors(err: FastifyError, req: { id?: string }, reply: FastifyReply): FastifyReply {
  const [code, message] = fastifyCodes[err.code] ?? ["INTERNAL", INTERNAL_MESSAGE];
  if (req.id) reply.header(REQUEST_ID_HEADER, req.id);
  return reply.status(errorStatus[code]).send(errorBody(code, message, { requestId: req.id }));
}

const partNames: Record<string, string> = {
  body: "body",
  querystring: "query string",
  params: "path",
  headers: "headers",
};

/**
 * A schema failure as one sentence naming the field at fault (`"limit" in the query string must
 * be <= 200.`); the error handler answers it as 400 VALIDATION_FAILED.
 */
export function schemaErrorFormatter(errors: FastifySchemaValidationError[], dataVar: string): Error {
  // A union reports each branch and then itself; the first branch's complaint reads best.
  const e = errors.find((x) => x.keyword !== "anyOf") ?? errors[0];
  const part = partNames[dataVar] ?? dataVar;
  if (!e) return new Error(`The ${part} is not valid.`);
  let field = (e.instancePath ?? "").split("/").filter(Boolean).join(".");
  let problem = e.message ?? "is not valid";
  if (e.keyword === "required") {
    const missing = (e.params as { requiredProperties?: string[]; missingProperty?: string }) ?? {};
    const name = missing.requiredProperties?.[0] ?? missing.missingProperty ?? "";
    field = field ? `${field}.${name}` : name;
    problem = "is required";
  }
  const allowed = (e.params as { allowedValues?: unknown[] })?.allowedValues;
  if (allowed) problem = `must be one of ${allowed.map((v) => JSON.stringify(v)).join(", ")}`;
  const err = new Error(
    field
      ? `"${field}" in the ${part} ${problem}.`
      : `The ${part} ${problem}${dataVar === "body" ? "; send a JSON object" : ""}.`,
  );
  // The field at fault as `param`: its dotted path inside the part (`input.text`), or the
  // part itself when the whole of it is wrong (`body`, `query`).
  return Object.assign(err, { param: field || paramParts[dataVar] || dataVar });
}

const paramParts: Record<string, string> = { querystring: "query", params: "path" };

/**
 * `{"error": {"code", "message", "param"?, "request_id"?}}`: `param` names the field at fault
 * (a dotted path, `input.text`), `request_id` the request, as its `X-Request-Id` answers it.
 */
export function errorBody(
  code: string,
  message: string,
  more: { param?: string | undefined; requestId?: string | undefined } = {},
) {
  return {
    error: {
      code,
      message,
      ...(more.param === undefined ? {} : { param: more.param }),
      ...(more.requestId === undefined ? {} : { request_id: more.requestId }),
    },
  };
}

/** How an error thrown by longhaul's own code is answered, by the router or without it. */
export interface ErrorResponse {
  status: number;
  body: ReturnType<typeof errorBody>;
  /** `Retry-After`, in seconds. */
  retryAfter?: string;
  /** The log line a 5xx gets (with the error); none for what the client got wrong. */
  logAs?: string;
}

/** A LonghaulError as its status, body and `Retry-After`; anything else as 500 INTERNAL. */
export function errorResponse(err: unknown, requestId?: string): ErrorResponse {
  if (err instanceof LonghaulError) {
    const retryAfter = err.details?.retry_after_s;
    return {
      status: errorStatus[err.code],
      body: errorBody(err.code, err.message, { param: err.param, requestId }),
      ...(typeof retryAfter === "number" ? { retryAfter: String(retryAfter) } : {}),
      ...(errorStatus[err.code] >= 500 ? { logAs: "request failed" } : {}),
    };
  }
  return {
    status: 500,
    body: errorBody("INTERNAL", INTERNAL_MESSAGE, { requestId }),
    logAs: "unexpected error",
  };
}

/**
 * Every error leaves as `{"error": {"code", "message", "param"?, "request_id"}}` with the
 * status from the one table.
 */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | LonghaulError | Error, req, reply) => {
    if (err instanceof LonghaulError) {
      const r = errorResponse(err, req.id);
      if (r.logAs) req.log.error({ err }, r.logAs);
      if (r.retryAfter !== undefined) reply.header("retry-after", r.retryAfter);
      return reply.status(r.status).send(r.body);
    }
    const fe = err as FastifyError;
    const mapped = fe.code ? fastifyCodes[fe.code] : undefined;
    if (mapped) {
      const status = fe.statusCode ?? 400;
      const validation = fe.code === "FST_ERR_VALIDATION";
      const param = validation ? (fe as { param?: unknown }).param : undefined;
      return reply.status(status).send(
        errorBody(mapped[0], validation ? fe.message : mapped[1], {
          param: typeof param === "string" ? param : undefined,
          requestId: req.id,
        }),
      );
    }
    if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
      return reply.status(fe.statusCode).send(errorBody("BAD_REQUEST", fe.message, { requestId: req.id }));
    }
    const r = errorResponse(err, req.id);
    req.log.error({ err }, r.logAs);
    return reply.status(r.status).send(r.body);
  });
  // The API's first path segments (`tasks`, `events`, …), so a path that forgot `/v1` is told so.
  const apiSegments = new Set<string>();
  app.addHook("onRoute", (route) => {
    const m = /^\/v1\/([^/:]+)/.exec(route.url);
    if (m) apiSegments.add(m[1] as string);
  });
  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split("?")[0] as string;
    const first = /^\/([^/]+)/.exec(path)?.[1];
    const hint =
      first !== undefined && first !== "v1" && apiSegments.has(first)
        ? ` The API is under /v1: did you mean ${req.method} /v1${path}?`
        : "";
    return reply
      .status(404)
      .send(errorBody("NOT_FOUND", `No route ${req.method} ${path}.${hint}`, { requestId: req.id }));
  });
}
