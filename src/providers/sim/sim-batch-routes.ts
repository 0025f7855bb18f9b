import type { IncomingMessage } from "node:http";
import type { BatchRunner } from "./batch-runner.ts";
import type { JobRunner } from "./job-runner.ts";
import type { SimBatch, SimFile } from "./sim-batch-store.ts";
import {
  chaosRefusal,
  fail,
  idempotencyKeyOf,
  isHttpUrl,
  notAllowed,
  notFound,
  type Reply,
  readBody,
  safeDecode,
} from "./sim-reply.ts";

/** The most bytes an uploaded file may have. */
export const FILE_LIMIT_BYTES = 200 * 1024 * 1024;

/**
 * The Files and Batch APIs in OpenAI's shapes (see README.md): `POST /v1/files` (multipart,
 * `purpose` and `file`), `GET /v1/files/:id`, `GET /v1/files/:id/content`, `POST /v1/batches`
 * (Idempotency-Key required, chaos as for jobs), `GET /v1/batches/:id`,
 * `POST /v1/batches/:id/cancel`.
 */
export async function batchRoute(
  req: IncomingMessage,
  at: {
    method: string;
    collection: "files" | "batches";
    rawId?: string | undefined;
    action?: string | undefined;
  },
  jobs: JobRunner,
  batches: BatchRunner,
): Promise<Reply> {
  const { method, collection, rawId, action } = at;
  if (rawId === undefined) {
    if (method !== "POST") return notAllowed("POST");
    return collection === "files" ? upload(req, batches) : create(req, jobs, batches);
  }
  const id = safeDecode(rawId);
  if (id === undefined) return notFound();
  if (collection === "files") {
    const file = batches.file(id);
    if (action !== undefined && action !== "content") return notFound();
    if (method !== "GET") return notAllowed("GET");
    if (!file) return fail(404, "file_not_found", `no file ${id}`);
    return action === "content"
      ? { status: 200, body: null, raw: file.bytes }
      : { status: 200, body: fileView(file) };
  }
  if (action === undefined) {
    if (method !== "GET") return notAllowed("GET");
    const batch = batches.batch(id);
    return batch ? { status: 200, body: batch.object } : batchNotFound(id);
  }
  if (action !== "cancel") return notFound();
  if (method !== "POST") return notAllowed("POST");
  const result = batches.cancel(id);
  if (result === undefined) return batchNotFound(id);
  if (!result.canceled && result.batch.object.status !== "cancelled") {
    return fail(
      409,
      "conflict",
      `batch ${id} has already ${String(result.batch.object.status)}; only a batch not yet ended can be cancelled`,
    );
  }
  return { status: 200, body: result.batch.object };
}

async function upload(req: IncomingMessage, batches: BatchRunner): Promise<Reply> {
  const type = req.headers["content-type"] ?? "";
  if (!type.startsWith("multipart/form-data")) {
    return fail(400, "invalid_request", "send the file as multipart/form-data with fields purpose and file");
  }
  const raw = await readBody(req, FILE_LIMIT_BYTES);
  if (raw === "too_large")
    return fail(413, "payload_too_large", `the file exceeds ${FILE_LIMIT_BYTES} bytes`);
  let form: FormData;
  try {
    form = await new Response(new Uint8Array(raw), { headers: { "content-type": type } }).formData();
  } catch {
    return fail(400, "invalid_request", "the body is not readable multipart/form-data");
  }
  const purpose = form.get("purpose");
  const file = form.get("file");
  if (typeof purpose !== "string" || purpose === "")
    return fail(400, "invalid_request", "purpose is required");
  if (file === null || typeof file === "string")
    return fail(400, "invalid_request", "file must be a file part");
  const key = req.headers["idempotency-key"];
  const stored = batches.upload(
    typeof key === "string" && key !== "" ? key : null,
    purpose,
    file.name || "upload.jsonl",
    Buffer.from(await file.arrayBuffer()),
  );
  return { status: 200, body: fileView(stored) };
}

async function create(req: IncomingMessage, jobs: JobRunner, batches: BatchRunner): Promise<Reply> {
  const key = idempotencyKeyOf(req, "batch");
  if (typeof key !== "string") return key;
  const raw = await readBody(req);
  if (raw === "too_large") return fail(413, "payload_too_large", "the body is too large");
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(raw.toString("utf8")) as Record<string, unknown>;
  } catch {
    return fail(400, "invalid_json", "the body is not JSON");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return fail(
      400,
      "invalid_request",
      "the body must be an object {input_file_id, endpoint, completion_window}",
    );
  }
  const { input_file_id, endpoint, completion_window, metadata, webhook_url } = body;
  if (typeof input_file_id !== "string" || batches.file(input_file_id) === undefined) {
    return fail(400, "invalid_request", "input_file_id must name an uploaded file");
  }
  if (typeof endpoint !== "string" || !endpoint.startsWith("/")) {
    return fail(400, "invalid_request", 'endpoint must be a path such as "/v1/responses"');
  }
  if (
    metadata !== undefined &&
    (typeof metadata !== "object" || metadata === null || Array.isArray(metadata))
  ) {
    return fail(400, "invalid_request", "metadata must be an object");
  }
  if (webhook_url !== undefined && (typeof webhook_url !== "string" || !isHttpUrl(webhook_url))) {
    return fail(400, "invalid_request", "webhook_url must be an http or https URL");
  }
  const refused = chaosRefusal(jobs, key);
  if (refused) return refused;
  const { batch, created } = batches.create(key, {
    inputFileId: input_file_id,
    endpoint,
    completionWindow: typeof completion_window === "string" ? completion_window : "24h",
    metadata: (metadata as Record<string, unknown> | undefined) ?? {},
    webhookUrl: typeof webhook_url === "string" ? webhook_url : null,
  });
  return { status: created ? 201 : 200, body: view(batch) };
}

function view(batch: SimBatch): Record<string, unknown> {
  return batch.object;
}

function fileView(f: SimFile): Record<string, unknown> {
  return {
    id: f.id,
    object: "file",
    bytes: f.bytes.length,
    created_at: Math.floor(f.createdAt / 1000),
    filename: f.filename,
    purpose: f.purpose,
  };
}

function batchNotFound(id: string): Reply {
  return fail(404, "batch_not_found", `no batch ${id}`);
}
