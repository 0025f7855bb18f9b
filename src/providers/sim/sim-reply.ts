import type { IncomingMessage } from "node:http";
import type { JobRunner } from "./job-runner.ts";

/** The most bytes a JSON request body may have. */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/** An answer: JSON `body`, or `raw` bytes sent as they are (a file's content). */
export type Reply = { status: number; body: unknown; headers?: Record<string, string>; raw?: Buffer };

/** The request's body, or "too_large" past `limit` bytes. */
export function readBody(req: IncomingMessage, limit = BODY_LIMIT_BYTES): Promise<Buffer | "too_large"> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const settle = (value: Buffer | "too_large" | Error) => {
      if (done) return;
      done = true;
      if (value instanceof Error) reject(value);
      else resolve(value);
    };
    req.on("data", (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limit) settle("too_large");
      else chunks.push(chunk);
    });
    req.on("end", () => settle(Buffer.concat(chunks)));
    req.on("error", (err) => settle(err));
    req.on("close", () => settle(new Error("the request closed before its body was read")));
  });
}

export function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
}

export function safeDecode(s: string): string | undefined {
  try {
    return decodeURIComponent(s);
  } catch {
    return undefined;
  }
}

export function fail(status: number, code: string, message: string): Reply {
  return { status, body: { error: { code, message } } };
}

export function notFound(): Reply {
  return fail(404, "not_found", "no such route; see the simulator's README for its API");
}

export function jobNotFound(id: string): Reply {
  return fail(404, "job_not_found", `no job ${id}`);
}

export function notAllowed(allow: string): Reply {
  return { ...fail(405, "method_not_allowed", `use ${allow} on this route`), headers: { allow } };
}

const KEY_MAX_LENGTH = 255;

/** The request's `Idempotency-Key`, or the 400 that asks for one. */
export function idempotencyKeyOf(req: IncomingMessage, what: string): string | Reply {
  const key = req.headers["idempotency-key"];
  if (typeof key !== "string" || key === "" || key.length > KEY_MAX_LENGTH) {
    return fail(
      400,
      "idempotency_key_required",
      `send an Idempotency-Key header of 1 to ${KEY_MAX_LENGTH} characters; a retry with the same key returns the same ${what}`,
    );
  }
  return key;
}

/** A creation chaos refuses (429 or 503, creating nothing), or null when it goes through. */
export function chaosRefusal(runner: JobRunner, key: string): Reply | null {
  const admitted = runner.admits(key);
  if (admitted === "throttled") {
    return {
      ...fail(
        429,
        "rate_limit_exceeded",
        "the simulator rate-limited this creation on purpose (chaos); retry after the Retry-After",
      ),
      headers: { "retry-after": String(runner.retryAfterS) },
    };
  }
  if (admitted === "unavailable") {
    return {
      ...fail(
        503,
        "unavailable",
        "the simulator refused this creation on purpose (chaos); retry with the same key",
      ),
      headers: { "retry-after": "1" },
    };
  }
  return null;
}
