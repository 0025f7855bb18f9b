import { Type } from "typebox";
import { Limit, Nullable, Page, Timestamp } from "./common.ts";

/** An uploaded file's metadata: `POST /v1/files`, `GET /v1/files/:id`, the items of `GET /v1/files`. */
export const FileObject = Type.Object({
  file_id: Type.String({ description: "`file_` and a ULID" }),
  filename: Nullable(Type.String({ description: "As given by `?filename=` at upload, or null" })),
  content_type: Type.String({ description: "The upload's Content-Type (default application/octet-stream)" }),
  size: Type.Integer({ minimum: 0, description: "Bytes" }),
  sha256: Type.String({ description: "Hex SHA-256 of the bytes" }),
  created_at: Timestamp,
});

/** `POST /v1/files?filename=`. The body is the file's bytes, sent as they are, with their Content-Type. */
export const FileUploadQuery = Type.Object({
  filename: Type.Optional(Type.String({ maxLength: 255, description: "The file's name, kept as metadata" })),
});

/**
 * `POST /v1/files` as a multipart form: the part named `file` holds the bytes. Documented only:
 * the upload's body is read as a stream by the route, never validated as a whole.
 */
export const FileUploadForm = Type.Object({
  file: Type.String({
    format: "binary",
    description: "The file's bytes; the part's type and filename are kept",
  }),
});

export const FileListQuery = Type.Object({
  limit: Type.Optional(Limit),
  cursor: Type.Optional(Type.String()),
});

export const FilePage = Page(FileObject);
