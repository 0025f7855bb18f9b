import type { IncomingMessage, ServerResponse } from "node:http";
import type { JobRunner } from "./job-runner.ts";
import { parseModelInput } from "./llm.ts";
import type { SimJob, SimStats } from "./sim-store.ts";

const BODY_LIMIT_BYTES = 1024 * 1024;
const KEY_MAX_LENGTH = 255;

type Reply = { status: number; body: unknown; headers?: Record<string, string> };

/**
 * The simulator's HTTP API (see README.md). Every request gets a JSON answer: bad input is a
 * 4xx, an unknown route a 404, and an unexpected failure a 500; none of them stops the server.
 */
export function simRequestHandler(
  runner: JobRunner,
  stats: () => SimStats,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    route(req, runner, stats)
      .catch((err: unknown) => fail(500, "internal", `the simulator failed: ${String(err)}`))
      .then((reply) => {
        if (res.headersSent || res.destroyed) return;
        res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
        res.end(JSON.stringify(reply.body));
      })
      .catch(() => res.destroy());
  };
}

async function route(req: IncomingMessage, runner: JobRunner, stats: () => SimStats): Promise<Reply> {
  const path = new URL(req.url ?? "/", "http://sim").pathname.split("/").filter((p) => p !== "");
  const method = req.method ?? "GET";
  const [v1, collection, rawId, action, ...rest] = path;
  if (v1 !== "v1" || rest.length > 0) return notFound();
  if (collection === "stats" && rawId === undefined) {
    return method === "GET" ? { status: 200, body: stats() } : notAllowed("GET");
  }
  if (collection !== "jobs") return notFound();
  if (rawId === undefined) return method === "POST" ? create(req, runner) : notAllowed("POST");
  const id = safeDecode(rawId);
  if (id === undefined) return notFound();
  if (action === undefined) {
    if (method !== "GET") return notAllowed("GET");
    const job = runner.job(id);
    return job ? { status: 200, body: view(job) } : jobNotFound(id);
  }
  if (action !== "cancel") return notFound();
  if (method !== "POST") return notAllowed("POST");
  const result = runner.cancel(id);
  if (result === undefined) return jobNotFound(id);
  if (!result.canceled && result.job.status !== "canceled") {
    return fail(
      409,
      "conflict",
      `job ${id} has already ${result.job.status}; only a job not yet ended can be canceled`,
    );
  }
  return { status: 200, body: view(result.job) };
}

async function create(req: IncomingMessage, runner: JobRunner): Promise<Reply> {
  const key = req.headers["idempotency-key"];
  if (typeof key !== "string" || key === "" || key.length > KEY_MAX_LENGTH) {
    return fail(
      400,
      "idempotency_key_required",
      `send an Idempotency-Key header of 1 to ${KEY_MAX_LENGTH} characters; a retry with the same key returns the same job`,
    );
  }
  const raw = await readBody(req);
  if (raw === "too_large")
    return fail(413, "payload_too_large", `the body exceeds ${BODY_LIMIT_BYTES} bytes`);
  let body: unknown;
  try {
    body = JSON.parse(raw.toString("utf8"));
  } catch {
    return fail(400, "invalid_json", "the body is not JSON; send {input, webhook_url}");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return fail(400, "invalid_request", "the body must be an object {input, webhook_url}");
  }
  const { input, webhook_url: webhookUrl } = body as { input?: unknown; webhook_url?: unknown };
  if (typeof webhookUrl !== "string" || !isHttpUrl(webhookUrl)) {
    return fail(400, "invalid_request", "webhook_url must be an http or https URL");
  }
  const parsed = parseModelInput(input);
  if (!parsed.ok) return fail(400, "invalid_request", parsed.message);
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
  const { job, created } = runner.create(key, parsed.input, webhookUrl);
  return created
    ? { status: 201, body: { id: job.id, status: job.status } }
    : { status: 200, body: view(job) };
}

function view(job: SimJob): Record<string, unknown> {
  return {
    id: job.id,
    status: job.status,
    ...(job.output === undefined ? {} : { output: job.output }),
    ...(job.error === undefined ? {} : { error: job.error }),
    ...(job.usage === undefined ? {} : { usage: job.usage }),
    created_at: new Date(job.createdAt).toISOString(),
  };
}

function readBody(req: IncomingMessage): Promise<Buffer | "too_large"> {
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
      if (size > BODY_LIMIT_BYTES) settle("too_large");
      else chunks.push(chunk);
    });
    req.on("end", () => settle(Buffer.concat(chunks)));
    req.on("error", (err) => settle(err));
    req.on("close", () => settle(new Error("the request closed before its body was read")));
  });
}

function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
}

function safeDecode(s: string): string | undefined {
  try {
    return decodeURIComponent(s);
  } catch {
    return undefined;
  }
}

function fail(status: number, code: string, message: string): Reply {
  return { status, body: { error: { code, message } } };
}

function notFound(): Reply {
  return fail(404, "not_found", "no such route; see the simulator's README for its API");
}

function jobNotFound(id: string): Reply {
  return fail(404, "job_not_found", `no job ${id}`);
}

function notAllowed(allow: string): Reply {
  return { ...fail(405, "method_not_allowed", `use ${allow} on this route`), headers: { allow } };
}
