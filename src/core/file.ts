import { LonghaulError } from "./errors.ts";

/**
 * A file a tenant uploaded: its bytes live in the blob store under `blobKey`, this row says
 * whose they are and what they are. The bytes are written before the row commits (ARCHITECTURE
 * §3.8): a row always names bytes that exist, and an upload cut off midway leaves no row.
 *
 * Files are deduplicated per tenant by content: an upload whose SHA-256 matches one of the
 * tenant's files answers that file (its name and type as first uploaded), and its own bytes are
 * removed. So each blob belongs to exactly one row, and deleting a file deletes its bytes.
 */
export interface FileRow {
  /** `file_` and a ULID: newest files sort first. */
  id: string;
  tenantId: string;
  filename: string | null;
  contentType: string;
  size: number;
  /** Hex SHA-256 of the bytes. */
  sha256: string;
  blobKey: string;
  createdAt: number;
}

export type NewFile = Omit<FileRow, "id">;

/** The id prefix of files. */
export const FILE_ID_PREFIX = "file";

/** The longest filename kept, in characters. */
export const FILENAME_MAX_LENGTH = 255;

/** What a file is stored as when the upload names no type. */
export const DEFAULT_CONTENT_TYPE = "application/octet-stream";

// type/subtype with optional parameters of printable ASCII: no control characters.
const CONTENT_TYPE = /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+(?:\s*;[\t -~]*)?$/;

/** The filename an upload gives (`?filename=`), checked: 1 to 255 characters, no control character or path separator. */
export function checkFilename(name: string | undefined): string | null {
  if (name === undefined || name === "") return null;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (name.length > FILENAME_MAX_LENGTH || /[\u0000-\u001f\u007f/\\]/.test(name)) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `The filename must be 1 to ${FILENAME_MAX_LENGTH} characters without control characters, '/' or '\\'.`,
      { param: "filename" },
    );
  }
  return name;
}

/** The Content-Type an upload is stored with: the request's, or `application/octet-stream`. */
export function checkContentType(value: string | undefined): string {
  if (value === undefined || value.trim() === "") return DEFAULT_CONTENT_TYPE;
  const type = value.trim();
  if (type.length > 255 || !CONTENT_TYPE.test(type)) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `The Content-Type "${type.slice(0, 80)}" is not a media type.`,
      {
        param: "headers.content-type",
      },
    );
  }
  return type;
}

/** The cap on an upload's size under `limits.file_max_bytes` (0 lifts it). */
export function fileSizeCap(fileMaxBytes: number): number | undefined {
  return fileMaxBytes > 0 ? fileMaxBytes : undefined;
}

/** The blob key of an upload's bytes: one key per upload, under its tenant. */
export function fileBlobKey(tenantId: string, uploadId: string): string {
  return `files/${tenantId}/${uploadId}`;
}

export function fileNotFound(id: string): LonghaulError {
  return new LonghaulError("FILE_NOT_FOUND", `No file ${id} in this tenant.`);
}

/** `413 STORAGE_QUOTA_EXCEEDED`: the upload would take the tenant's files past `quota` bytes. */
export function storageQuotaExceeded(quota: number, used: number, size: number): LonghaulError {
  return new LonghaulError(
    "STORAGE_QUOTA_EXCEEDED",
    `The tenant's files and artifacts take ${used} bytes; ${size} more would pass its storage quota of ${quota} bytes (limits.storage_quota_bytes or the tenant's quotas.storage_quota_bytes); nothing was kept.`,
    { details: { quota_bytes: quota, used_bytes: used, size } },
  );
}
