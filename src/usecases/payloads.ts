import { Readable } from "node:stream";
import type { BlobStore, ByteRange } from "../blobs/blob-store.ts";
import { LonghaulError } from "../core/errors.ts";
import {
  inlineStored,
  inlineValue,
  type PayloadRef,
  payloadBlobKey,
  payloadRef,
  sha256Hex,
  storedRef,
} from "../core/payload.ts";

/**
 * Where large values go (ARCHITECTURE §4.10): the blob store, and the JSON length above which a
 * value is kept there (`limits.inline_max_bytes`; 0 keeps every value inline).
 */
export interface PayloadBlobs {
  blobs: BlobStore;
  inlineMaxBytes: number;
}

/**
 * A value as its row is to hold it. One whose JSON is longer than `inlineMaxBytes` is written
 * to the blob store first, whole and durable, under its SHA-256 (`payloads/<tenant>/<sha256>`),
 * and the row holds the reference; so a row never names bytes that are not there (§3.8), and
 * the same value written twice (a replay, a duplicate submit) is one blob. Any other value is
 * kept inline, a look-alike of a reference wrapped (`inlineStored`). Without `p`, inline.
 */
export async function storePayload(
  p: PayloadBlobs | undefined,
  tenantId: string,
  value: unknown,
): Promise<unknown> {
  if (p === undefined || p.inlineMaxBytes === 0) return inlineStored(value);
  const text = JSON.stringify(value ?? null);
  // A string's length is at most its UTF-8 length, so most values are told by it alone.
  if (text.length <= p.inlineMaxBytes / 3 || Buffer.byteLength(text) <= p.inlineMaxBytes) {
    return inlineStored(value);
  }
  const bytes = Buffer.from(text, "utf8");
  const sha256 = sha256Hex(bytes);
  const key = payloadBlobKey(tenantId, sha256);
  // Written again even when the key exists: a put replaces a blob whole, so a second write of
  // the same value (a duplicate submit) also mends bytes altered behind longhaul's back.
  await p.blobs.put(key, Readable.from([bytes]));
  return storedRef({ sha256, size: bytes.length });
}

/**
 * The value a stored one holds: itself, unwrapped, or for a reference the tenant's blob read
 * whole, its size and SHA-256 checked against the reference, and parsed. Missing or altered
 * bytes are PAYLOAD_UNREADABLE: nothing is ever answered that is not what was stored.
 */
export async function loadPayload(blobs: BlobStore | undefined, tenantId: string, stored: unknown) {
  const ref = payloadRef(stored);
  if (ref === null) return inlineValue(stored);
  return JSON.parse((await readPayloadBytes(blobs, tenantId, ref)).toString("utf8")) as unknown;
}

/** A reference's bytes, whole, checked against its size and SHA-256. */
export async function readPayloadBytes(
  blobs: BlobStore | undefined,
  tenantId: string,
  ref: PayloadRef,
): Promise<Buffer> {
  const key = payloadBlobKey(tenantId, ref.sha256);
  if (blobs === undefined) throw unreadable(key, "this node has no blob store");
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of await blobs.get(key)) chunks.push(chunk as Buffer);
  } catch (err) {
    if ((err as { code?: string }).code === "BLOB_NOT_FOUND") throw unreadable(key, "its blob is missing");
    throw err;
  }
  const bytes = Buffer.concat(chunks);
  if (bytes.length !== ref.size || sha256Hex(bytes) !== ref.sha256) {
    throw unreadable(key, "its bytes do not match the SHA-256 the row names");
  }
  return bytes;
}

/** A reference's bytes as a stream, for a download; its ETag is the SHA-256 the client may check. */
export async function openPayload(
  blobs: BlobStore | undefined,
  tenantId: string,
  ref: PayloadRef,
  range?: ByteRange,
): Promise<Readable> {
  const key = payloadBlobKey(tenantId, ref.sha256);
  if (blobs === undefined) throw unreadable(key, "this node has no blob store");
  try {
    return await blobs.get(key, range);
  } catch (err) {
    if ((err as { code?: string }).code === "BLOB_NOT_FOUND") throw unreadable(key, "its blob is missing");
    throw err;
  }
}

function unreadable(key: string, why: string): LonghaulError {
  return new LonghaulError("PAYLOAD_UNREADABLE", `The value stored as ${key} cannot be read: ${why}.`, {
    details: { key },
  });
}
