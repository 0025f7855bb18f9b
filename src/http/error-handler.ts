import type { FastifyError, FastifyInstance } from "fastify";
import { type ErrorCode, LonghaulError } from "../core/errors.ts";

/** Fastify's own failures mapped onto our stable codes, so bad input never gets a 5xx. */
const fastifyCodes: Record<string, [ErrorCode, string]> = {
  FST_ERR_CTP_INVALID_JSON_BODY: ["INVALID_JSON", "The body is not valid JSON."],
  FST_ERR_CTP_EMPTY_JSON_BODY: ["INVALID_JSON", "The body is empty; send a JSON object."],
  FST_ERR_CTP_BODY_TOO_LARGE: ["PAYLOAD_TOO_LARGE", "The body is larger than this endpoint accepts."],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: ["UNSUPPORTED_MEDIA_TYPE", "Send the body as application/json."],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: ["BAD_REQUEST", "The Content-Length header does not match the body."],
  FST_ERR_VALIDATION: ["VALIDATION_FAILED", "The request is not valid."],
};

export function errorBody(code: string, message: string) {
  return { error: { code, message } };
}

/** Every error leaves as `{"error": {"code", "message"}}` with the status from the one table. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | LonghaulError | Error, req, reply) => {
    if (err instanceof LonghaulError) {
      if (err.httpStatus >= 500) req.log.error({ err }, "request failed");
      const retryAfter = err.details?.retry_after_s;
      if (typeof retryAfter === "number") reply.header("retry-after", String(retryAfter));
      return reply.status(err.httpStatus).send(errorBody(err.code, err.message));
    }
    const fe = err as FastifyError;
    const mapped = fe.code ? fastifyCodes[fe.code] : undefined;
    if (mapped) {
      const status = fe.statusCode ?? 400;
      return reply
        .status(status)
        .send(errorBody(mapped[0], fe.code === "FST_ERR_VALIDATION" ? fe.message : mapped[1]));
    }
    if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
      return reply.status(fe.statusCode).send(errorBody("BAD_REQUEST", fe.message));
    }
    req.log.error({ err }, "unexpected error");
    return reply
      .status(500)
      .send(errorBody("INTERNAL", "Something went wrong on our side; the request can be retried."));
  });
  app.setNotFoundHandler((req, reply) =>
    reply.status(404).send(errorBody("NOT_FOUND", `No route ${req.method} ${req.url.split("?")[0]}.`)),
  );
}
