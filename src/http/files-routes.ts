import fastifyMultipart from "@fastify/multipart";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { BlobStore } from "../blobs/blob-store.ts";
import type { Clock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import { type FileRow, fileSizeCap } from "../core/file.ts";
import type { FileStore } from "../store/store.ts";
import { deleteFile } from "../usecases/delete-file.ts";
import { getFile, readFileContent } from "../usecases/get-file.ts";
import { listFiles } from "../usecases/list-files.ts";
import { type UploadFileInput, uploadFile } from "../usecases/upload-file.ts";
import { IdParams, NoContent } from "../wire/common.ts";
import { FileListQuery, FileObject, FilePage, FileUploadQuery } from "../wire/files.ts";
import type { Api } from "./api.ts";
import { operation } from "./openapi.ts";
import { serveBlob } from "./serve-blob.ts";

export interface FilesRoutesDeps {
  store: FileStore;
  blobs: BlobStore;
  clock: Clock;
  /** `limits.file_max_bytes`; 0 lifts the cap. */
  fileMaxBytes: number;
  /** `limits.storage_quota_bytes`; 0 lifts it. */
  storageQuotaBytes: number;
}

const toWire = (f: FileRow) => ({
  file_id: f.id,
  filename: f.filename,
  content_type: f.contentType,
  size: f.size,
  sha256: f.sha256,
  created_at: new Date(f.createdAt).toISOString(),
});

/**
 * `/v1/files`: upload (the raw body, streamed to the blob store, never buffered and not held to
 * the API's 1 MiB JSON limit), metadata, content (with Range), delete, list. Every query is
 * scoped by the caller's tenant.
 */
export function filesRoutes(app: Api, d: FilesRoutesDeps): void {
  const deps = { files: d.store, blobs: d.blobs, clock: d.clock };
  // In a plugin of their own, so the upload's stream parser applies to these routes only.
  app.register(async (child) => {
    const files = child.withTypeProvider<TypeBoxTypeProvider>();
    // The body is read by the use case, from the request's stream: whatever its type, it is
    // not parsed, and no body limit but `limits.file_max_bytes` applies.
    files.removeAllContentTypeParsers();
    files.addContentTypeParser("*", (_req, _payload, done) => done(null, undefined));
    // multipart/form-data: the part named `file`, streamed like a raw body. One byte past the
    // cap is let through so the blob store, not the parser, refuses it (`FILE_TOO_LARGE`).
    const cap = fileSizeCap(d.fileMaxBytes);
    await files.register(fastifyMultipart, {
      limits: { files: 1, fields: 20, ...(cap === undefined ? {} : { fileSize: cap + 1 }) },
    });

    files.post(
      "/v1/files",
      {
        bodyLimit: Number.MAX_SAFE_INTEGER,
        schema: operation(
          "Upload a file: the body is its bytes, with their Content-Type; 201, or 200 with the tenant's file of the same SHA-256",
          { querystring: FileUploadQuery, response: { 200: FileObject, 201: FileObject } },
        ),
      },
      async (req, reply) => {
        const declared = Number(req.headers["content-length"]);
        if (cap !== undefined && Number.isFinite(declared) && declared > cap) {
          // Refused before a byte is read; the connection closes rather than drain the body.
          reply.header("connection", "close");
          throw new LonghaulError(
            "FILE_TOO_LARGE",
            `The file is larger than the limit of ${cap} bytes (limits.file_max_bytes); nothing was kept.`,
            { details: { limit_bytes: cap } },
          );
        }
        let upload: Pick<UploadFileInput, "body" | "contentType" | "filename">;
        if (req.isMultipart()) {
          const part = await req.file().catch((err: unknown) => {
            throw new LonghaulError(
              "BAD_REQUEST",
              `The multipart body could not be read: ${(err as Error).message}`,
              {
                cause: err,
              },
            );
          });
          if (part?.fieldname !== "file") {
            throw new LonghaulError("VALIDATION_FAILED", "Send the file in a multipart field named `file`.", {
              param: "body",
            });
          }
          upload = {
            body: part.file,
            contentType: part.mimetype,
            filename: req.query.filename ?? part.filename,
          };
        } else {
          // Not destroyed when the upload is refused midway: the answer still reaches the client.
          upload = {
            body: req.raw.iterator({ destroyOnReturn: false }),
            contentType: req.headers["content-type"],
            filename: req.query.filename,
          };
        }
        const r = await uploadFile(deps, {
          tenantId: req.tenant.id,
          ...upload,
          maxBytes: d.fileMaxBytes,
          storageQuotaBytes: d.storageQuotaBytes,
        });
        return reply.status(r.created ? 201 : 200).send(toWire(r.file));
      },
    );

    files.get(
      "/v1/files",
      {
        schema: operation("List files, newest first", {
          querystring: FileListQuery,
          response: { 200: FilePage },
        }),
      },
      async (req) => {
        const page = await listFiles(deps, req.tenant.id, req.query);
        return { data: page.files.map(toWire), next_cursor: page.nextCursor };
      },
    );

    files.get(
      "/v1/files/:id",
      { schema: operation("A file's metadata", { params: IdParams, response: { 200: FileObject } }) },
      async (req) => toWire(await getFile(deps, req.tenant.id, req.params.id)),
    );

    files.get(
      "/v1/files/:id/content",
      {
        schema: operation(
          "A file's bytes, streamed with its Content-Type; a single `Range: bytes=` is honoured (206)",
          {
            params: IdParams,
          },
        ),
      },
      async (req, reply) => {
        const file = await getFile(deps, req.tenant.id, req.params.id);
        return serveBlob(req, reply, { ...file, whose: "the file's" }, async (range) => {
          return (await readFileContent(deps, req.tenant.id, file.id, range)).body;
        });
      },
    );

    files.delete(
      "/v1/files/:id",
      {
        schema: operation("Delete a file: its row, then its bytes", {
          params: IdParams,
          response: { 204: NoContent },
        }),
      },
      async (req, reply) => {
        await deleteFile(deps, req.tenant.id, req.params.id);
        return reply.status(204).send(null);
      },
    );
  });
}
