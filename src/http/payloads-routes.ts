import { Readable } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { BlobStore } from "../blobs/blob-store.ts";
import { inlineValue, payloadRef, sha256Hex } from "../core/payload.ts";
import type { TaskStore } from "../store/store.ts";
import { getTaskPayload, type TaskValue } from "../usecases/get-task-payload.ts";
import { taskInScope } from "../usecases/mint-read-token.ts";
import { openPayload } from "../usecases/payloads.ts";
import { IdParams } from "../wire/common.ts";
import { StepOutputParams } from "../wire/tasks.ts";
import type { Api } from "./api.ts";
import { operation } from "./openapi.ts";
import { serveBlob } from "./serve-blob.ts";

export interface PayloadsRoutesDeps {
  store: TaskStore;
  blobs?: BlobStore | undefined;
}

/**
 * `GET /v1/tasks/:id/input`, `/output` and `/steps/:step/output`: a task's value as its JSON
 * bytes, streamed from the blob store when it is kept there (ARCHITECTURE §4.10), with its
 * SHA-256 as ETag and a single `Range` honoured. Scoped by the caller's tenant; a read token
 * that opens the task opens them too, which is what the `<field>_url` links carry.
 */
export function payloadsRoutes(app: Api, d: PayloadsRoutesDeps): void {
  const serve = async (req: FastifyRequest, reply: FastifyReply, taskId: string, value: TaskValue) => {
    const scope = req.readScope;
    const tenantId = req.tenant.id;
    if (scope) await taskInScope({ tasks: d.store }, { tenantId, scope, taskId });
    const stored = await getTaskPayload({ tasks: d.store }, { tenantId, taskId, value });
    const whose = "the value's";
    const ref = payloadRef(stored);
    if (ref) {
      return serveBlob(req, reply, { ...ref, contentType: JSON_TYPE, whose }, (range) =>
        openPayload(d.blobs, tenantId, ref, range),
      );
    }
    const bytes = Buffer.from(JSON.stringify(inlineValue(stored) ?? null), "utf8");
    const blob = { size: bytes.length, sha256: sha256Hex(bytes), contentType: JSON_TYPE, whose };
    return serveBlob(req, reply, blob, async (range) =>
      Readable.from([range ? bytes.subarray(range.start, (range.end ?? bytes.length - 1) + 1) : bytes]),
    );
  };
  const describe = (what: string) =>
    `${what} as JSON, streamed from the blob store when it is kept there; a single \`Range: bytes=\` is honoured (206). API key, or a read token that opens the task (the \`_url\` links carry one)`;

  app.get(
    "/v1/tasks/:id/input",
    { config: { readToken: true }, schema: operation(describe("A task's input"), { params: IdParams }) },
    async (req, reply) => serve(req, reply, req.params.id, { kind: "input" }),
  );
  app.get(
    "/v1/tasks/:id/output",
    { config: { readToken: true }, schema: operation(describe("A task's output"), { params: IdParams }) },
    async (req, reply) => serve(req, reply, req.params.id, { kind: "output" }),
  );
  app.get(
    "/v1/tasks/:id/steps/:step/output",
    {
      config: { readToken: true },
      schema: operation(describe("A step's result"), { params: StepOutputParams }),
    },
    async (req, reply) => serve(req, reply, req.params.id, { kind: "step", stepId: req.params.step }),
  );
}

const JSON_TYPE = "application/json; charset=utf-8";
