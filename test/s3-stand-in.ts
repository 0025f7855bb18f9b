import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A stand-in for the S3 REST calls `S3BlobStore` makes, over real HTTP: PutObject, GetObject
 * (with Range), HeadObject, DeleteObject and ListObjectsV2, path-style (`/bucket/key`).
 * HeadObject answers Last-Modified from `modifiedAt`, which a test may set back. Signatures are
 * not checked. ListObjectsV2 answers at most `pageSize` keys a page, so the
 * client's continuation is exercised. Objects are held in memory: the stand-in is for tests.
 */
export async function startS3StandIn(options: { bucket: string; pageSize?: number }): Promise<{
  endpoint: string;
  objects: Map<string, { body: Buffer; meta: Record<string, string>; modifiedAt?: number }>;
  close: () => Promise<void>;
}> {
  const objects = new Map<string, { body: Buffer; meta: Record<string, string>; modifiedAt?: number }>();
  const pageSize = options.pageSize ?? 2;
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      res.statusCode = 500;
      res.end(String(err));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://stand-in");
    const [, bucket, ...rest] = url.pathname.split("/");
    const key = decodeURIComponent(rest.join("/"));
    if (bucket !== options.bucket) return error(res, 404, "NoSuchBucket", "no such bucket");
    if (req.method === "GET" && key === "" && url.searchParams.get("list-type") === "2") {
      const prefix = url.searchParams.get("prefix") ?? "";
      const after = url.searchParams.get("continuation-token") ?? "";
      const keys = [...objects.keys()].filter((k) => k.startsWith(prefix) && k > after).sort();
      const page = keys.slice(0, pageSize);
      const truncated = keys.length > page.length;
      res.setHeader("content-type", "application/xml");
      res.end(
        `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` +
          `<Name>${options.bucket}</Name><Prefix>${xml(prefix)}</Prefix><KeyCount>${page.length}</KeyCount>` +
          `<MaxKeys>${pageSize}</MaxKeys><IsTruncated>${truncated}</IsTruncated>` +
          (truncated ? `<NextContinuationToken>${xml(page.at(-1) ?? "")}</NextContinuationToken>` : "") +
          page
            .map(
              (k) =>
                `<Contents><Key>${xml(k)}</Key><Size>${objects.get(k)?.body.length ?? 0}</Size></Contents>`,
            )
            .join("") +
          `</ListBucketResult>`,
      );
      return;
    }
    if (req.method === "PUT") {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks);
      const declared = Number(req.headers["content-length"]);
      if (declared !== body.length)
        return error(res, 400, "IncompleteBody", "body shorter than Content-Length");
      const meta: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) {
        if (name.startsWith("x-amz-meta-") && typeof value === "string") meta[name] = value;
      }
      objects.set(key, { body, meta, modifiedAt: Date.now() });
      res.setHeader("etag", `"${body.length}"`);
      res.end();
      return;
    }
    const object = objects.get(key);
    if (req.method === "DELETE") {
      objects.delete(key);
      res.statusCode = 204;
      res.end();
      return;
    }
    if (req.method === "HEAD") {
      if (!object) {
        res.statusCode = 404;
        res.end();
        return;
      }
      res.setHeader("content-length", object.body.length);
      res.setHeader("last-modified", new Date(object.modifiedAt ?? Date.now()).toUTCString());
      for (const [name, value] of Object.entries(object.meta)) res.setHeader(name, value);
      res.end();
      return;
    }
    if (req.method === "GET") {
      if (!object) return error(res, 404, "NoSuchKey", "The specified key does not exist.");
      const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
      if (req.headers.range && !range) return error(res, 400, "InvalidArgument", "bad range");
      if (range) {
        const start = Number(range[1]);
        const end = range[2] ? Math.min(Number(range[2]), object.body.length - 1) : object.body.length - 1;
        if (start >= object.body.length || end < start) return error(res, 416, "InvalidRange", "range");
        res.statusCode = 206;
        res.setHeader("content-range", `bytes ${start}-${end}/${object.body.length}`);
        res.setHeader("content-length", end - start + 1);
        res.end(object.body.subarray(start, end + 1));
        return;
      }
      res.setHeader("content-length", object.body.length);
      res.end(object.body);
      return;
    }
    error(res, 405, "MethodNotAllowed", "method");
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    objects,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function error(res: ServerResponse, status: number, code: string, message: string): void {
  res.statusCode = status;
  res.setHeader("content-type", "application/xml");
  res.end(
    `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`,
  );
}

function xml(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}
