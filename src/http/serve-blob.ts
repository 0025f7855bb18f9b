import type { Readable } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ByteRange } from "../blobs/blob-store.ts";
import { LonghaulError } from "../core/errors.ts";

/** What a download answers about the bytes it serves: a file's or an artifact's row. */
export interface ServedBlob {
  size: number;
  contentType: string;
  /** Hex SHA-256: the strong ETag. */
  sha256: string;
  /** What the bytes are, for the error of a range outside them ("the file's", "the artifact's"). */
  whose: string;
}

/**
 * Serves stored bytes: whole (200) or the single `Range: bytes=` the request asks for (206),
 * with Content-Type, Content-Length, `Accept-Ranges: bytes` and the SHA-256 as ETag. A range
 * outside them is 416 `RANGE_NOT_SATISFIABLE` with a Content-Range naming the size. `open` reads
 * the bytes (the blob store's `get`); it is called only once the range is known good.
 */
export async function serveBlob(
  req: FastifyRequest,
  reply: FastifyReply,
  blob: ServedBlob,
  open: (range: ByteRange | undefined) => Promise<Readable>,
): Promise<FastifyReply> {
  const range = parseRange(req.headers.range, blob.size);
  if (range === "unsatisfiable") {
    reply.header("content-range", `bytes */${blob.size}`);
    throw new LonghaulError(
      "RANGE_NOT_SATISFIABLE",
      `The range ${req.headers.range} is outside ${blob.whose} ${blob.size} bytes.`,
      { details: { size: blob.size } },
    );
  }
  let body: Readable;
  try {
    body = await open(range ?? undefined);
  } catch (err) {
    if (err instanceof LonghaulError && err.code === "RANGE_NOT_SATISFIABLE")
      reply.header("content-range", `bytes */${blob.size}`);
    throw err;
  }
  reply.header("content-type", blob.contentType);
  reply.header("accept-ranges", "bytes");
  reply.header("etag", `"${blob.sha256}"`);
  if (range) {
    const end = range.end ?? blob.size - 1;
    reply.status(206);
    reply.header("content-range", `bytes ${range.start}-${end}/${blob.size}`);
    reply.header("content-length", end - range.start + 1);
  } else {
    reply.header("content-length", blob.size);
  }
  // A stream is sent as it is: no serializer applies.
  return reply.send(body as never);
}

/**
 * A single `bytes=` range of a blob of `size` bytes: `start-end`, `start-`, or the last `n`
 * bytes (`-n`); the end is kept within the blob. No header, another unit, several ranges or a
 * malformed one: null, and the whole blob is answered (RFC 9110 §14.2 lets a server ignore it).
 */
export function parseRange(header: string | undefined, size: number): ByteRange | null | "unsatisfiable" {
  if (header === undefined) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return null;
  if (m[1] === "") {
    const n = Number(m[2]);
    if (n === 0 || size === 0) return "unsatisfiable";
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) return "unsatisfiable";
  return { start, end };
}
