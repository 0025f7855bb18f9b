import type { IncomingMessage, ServerResponse } from "node:http";
import type { BatchRunner } from "./batch-runner.ts";
import type { JobRunner } from "./job-runner.ts";
import { parseModelInput } from "./llm.ts";
import { batchRoute } from "./sim-batch-routes.ts";
import {
  BODY_LIMIT_BYTES,
  chaosRefusal,
  fail,
  idempotencyKeyOf,
  isHttpUrl,
  jobNotFound,
  notAllowed,
  notFound,
  type Reply,
  readBody,
  safeDecode,
} from "./sim-reply.ts";
import type { SimJob, SimStats } from "./sim-store.ts";

/**
 * The simulator's HTTP API (see README.md). Every request gets a JSON answer: bad input is a
 * 4xx, an unknown route a 404, and an unexpected failure a 500; none of them stops the server.
 */
export function simRequestHandler(
  runner: JobRunner,
  stats: () => SimStats,
  batches: BatchRunner,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    route(req, runner, stats, batches)
      .catch((err: unknown) => fail(500, "internal", `the simulator failed: ${String(err)}`))
      .then((reply) => {
        if (res.headersSent || res.destroyed) return;
        if (reply.raw !== undefined) {
          res.writeHead(reply.status, {
            "content-type": "application/octet-stream",
            "content-length": String(reply.raw.length),
            ...reply.headers,
          });
          res.end(reply.raw);
          return;
        }
        res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
        res.end(JSON.stringify(reply.body));
      })
      .catch(() => res.destroy());
  };
}

async function route(
  req: IncomingMessage,
  runner: JobRunner,
  stats: () => SimStats,
  batches: BatchRunner,
): Promise<Reply> {
  const path = new URL(req.url ?? "/", "http://sim").pathname.split("/").filter((p) => p !== "");
  const method = req.method ?? "GET";
  const [v1, collection, rawId, action, ...rest] = path;
  if (v1 !== "v1" || rest.length > 0) return notFound();
  if (collection === "stats" && rawId === undefined) {
    return method === "GET" ? { status: 200, body: stats() } : notAllowed("GET");
  }
  if (collection === "files" || collection === "batches") {
    return batchRoute(req, { method, collection, rawId, action }, runner, batches);
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
  const key = idempotencyKeyOf(req, "job");
  if (typeof key !== "string") return key;
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
  const refused = chaosRefusal(runner, key);
  if (refused) return refused;
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
