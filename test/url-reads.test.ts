import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { type AddressInfo, createServer as createTcpServer, type Server as TcpServer } from "node:net";
import { after, before, describe, test } from "node:test";
import { LonghaulError, NonRetriableError } from "../src/core/errors.ts";
import type { IdleTimer, IdleTimers } from "../src/outbound/idle-timer.ts";
import { type UrlReaderOptions, urlReader } from "../src/outbound/read-url.ts";
import { waitFor } from "./helpers.ts";
import { startS3StandIn } from "./s3-stand-in.ts";
import { type Stack, startStack } from "./stack.ts";

// Task code's reads of {"url": …} references (src/outbound/read-url.ts) over real loopback HTTP.
// TLS is not set up here: plain http on loopback is what `outbound.allow_private_networks`
// allows (as the outbound tests do), and the production policy is shown refusing it. Timeouts
// are ended by the injected idle timer's signal, never by waiting on the wall clock.

const bytes = (n: number, seed = 7) => {
  const out = Buffer.alloc(n);
  for (let i = 0; i < n; i++) out[i] = (i * 31 + seed) & 0xff;
  return out;
};
const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

async function readAll(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

const isCode =
  (code: string, final: boolean, message?: RegExp) =>
  (err: unknown): boolean => {
    assert.ok(err instanceof LonghaulError, String(err));
    assert.equal(err.code, code, err.message);
    assert.equal(err instanceof NonRetriableError, final, `${code} retriable: ${!final} (${err.message})`);
    if (message) assert.match(err.message, message);
    return true;
  };

/** Idle timers the test ends by hand: `last` is the timer of the read under way. */
function manualTimers(): { timers: IdleTimers; last: () => IdleTimer & { fire(): void } } {
  let current: (IdleTimer & { fire(): void }) | null = null;
  return {
    timers: () => {
      const ac = new AbortController();
      current = { signal: ac.signal, touch() {}, clear() {}, fire: () => ac.abort() };
      return current;
    },
    last: () => {
      assert.ok(current, "a read has started");
      return current;
    },
  };
}

async function listen(server: Server | TcpServer): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("reading {url} references from task code", () => {
  const body = bytes(300_000);
  let origin: string;
  let requests: string[] = [];
  let stalled: { req: IncomingMessage; res: ServerResponse }[] = [];
  let hosts: string[] = [];
  const server = createServer((req, res) => {
    requests.push(req.url ?? "");
    hosts.push(req.headers.host ?? "");
    const url = new URL(req.url ?? "/", "http://x");
    const to = url.searchParams.get("to");
    if (url.pathname === "/doc.bin") {
      res.setHeader("content-type", "application/octet-stream");
      res.setHeader("content-length", body.length);
      res.end(body);
    } else if (url.pathname === "/chunked") {
      // No Content-Length: the cap is met midway, not announced.
      res.write(body.subarray(0, 100_000));
      res.end(body.subarray(100_000));
    } else if (url.pathname === "/redirect" && to) {
      res.statusCode = 302;
      res.setHeader("location", to);
      res.end();
    } else if (url.pathname === "/loop") {
      res.statusCode = 301;
      res.setHeader("location", "/loop");
      res.end();
    } else if (url.pathname === "/stall-headers") {
      stalled.push({ req, res });
    } else if (url.pathname === "/stall-body") {
      res.setHeader("content-length", 1000);
      res.write(body.subarray(0, 10));
      stalled.push({ req, res });
    } else {
      res.statusCode = Number(url.pathname.slice(1)) || 404;
      res.end("no");
    }
  });
  // Answers written byte by byte: a body shorter or longer than its Content-Length.
  const raw = createTcpServer((socket) => {
    socket.once("data", (head) => {
      const path = head.toString("latin1").split(" ")[1];
      if (path === "/short") {
        socket.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n");
        socket.end(Buffer.alloc(50, 1));
      } else {
        socket.end(`HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello and then some more bytes`);
      }
    });
  });
  let rawOrigin: string;
  const reader = (o: Partial<UrlReaderOptions> = {}) =>
    urlReader({ policy: { allowPrivateNetworks: true }, maxBytes: 1_000_000, ...o });

  before(async () => {
    origin = await listen(server);
    rawOrigin = await listen(raw);
  });
  after(() => {
    server.closeAllConnections();
    server.close();
    raw.close();
  });

  test("a URL streams byte-identical, through redirects, with its length and type", async () => {
    const opened = await reader().open(
      `${origin}/redirect?to=${encodeURIComponent("/redirect?to=/doc.bin")}`,
    );
    assert.equal(opened.size, body.length);
    assert.equal(opened.contentType, "application/octet-stream");
    assert.equal(sha(await readAll(opened.stream)), sha(body));
  });

  test("the request goes to the address the name was vetted at, with the name as Host", async () => {
    let asked = 0;
    const resolve = async (host: string) => {
      asked++;
      return host === "files.example" ? [{ address: "127.0.0.1", family: 4 }] : [];
    };
    hosts = [];
    const port = new URL(origin).port;
    const opened = await reader({ resolve }).open(`http://files.example:${port}/doc.bin`);
    assert.equal(sha(await readAll(opened.stream)), sha(body));
    assert.equal(asked, 1, "resolved once, by the guard");
    assert.deepEqual(hosts, [`files.example:${port}`]);
  });

  test("a redirect to a link-local address, by literal or by name, or to another scheme is URL_NOT_ALLOWED, without retry", async () => {
    const resolve = async (host: string) =>
      host === "metadata.example" ? [{ address: "169.254.169.254", family: 4 }] : [];
    for (const to of [
      "http://169.254.169.254/latest/meta-data/",
      "http://metadata.example/latest/meta-data/",
      "http://[fe80::1]/x",
      "file:///etc/passwd",
      "s3://bucket/key",
    ]) {
      await assert.rejects(
        reader({ resolve }).open(`${origin}/redirect?to=${encodeURIComponent(to)}`),
        isCode("URL_NOT_ALLOWED", true),
        to,
      );
    }
  });

  test("under the production policy, plain http and a name resolving to a private address are refused before connecting", async () => {
    requests = [];
    const strict = reader({
      policy: { allowPrivateNetworks: false },
      resolve: async () => [{ address: "10.0.0.8", family: 4 }],
    });
    await assert.rejects(strict.open(`${origin}/doc.bin`), isCode("URL_NOT_ALLOWED", true));
    await assert.rejects(
      strict.open("https://files.example/doc.bin"),
      isCode("URL_NOT_ALLOWED", true, /10\.0\.0\.8/),
    );
    assert.deepEqual(requests, [], "nothing was asked of any server");
  });

  test("more than five redirects is URL_READ_FAILED, without retry", async () => {
    await assert.rejects(reader().open(`${origin}/loop`), isCode("URL_READ_FAILED", true, /redirects/));
  });

  test("an answer of 404 is final; 503 and 429 are retried", async () => {
    await assert.rejects(reader().open(`${origin}/404`), isCode("URL_READ_FAILED", true, /404/));
    await assert.rejects(reader().open(`${origin}/503`), isCode("URL_READ_FAILED", false, /503/));
    await assert.rejects(reader().open(`${origin}/429`), isCode("URL_READ_FAILED", false, /429/));
  });

  test("past limits.file_max_bytes: refused by its Content-Length before reading, or midway when it has none", async () => {
    const small = reader({ maxBytes: 200_000 });
    await assert.rejects(small.open(`${origin}/doc.bin`), isCode("FILE_TOO_LARGE", true, /200000 bytes/));
    const opened = await small.open(`${origin}/chunked`);
    await assert.rejects(readAll(opened.stream), isCode("FILE_TOO_LARGE", true));
    assert.equal((await readAll((await reader().open(`${origin}/chunked`)).stream)).length, body.length);
  });

  test("a body cut short, or longer than its Content-Length, is URL_READ_FAILED (retried), never a short stream", async () => {
    const short = await reader().open(`${rawOrigin}/short`);
    await assert.rejects(
      readAll(short.stream),
      isCode("URL_READ_FAILED", false, /50 of its 100 bytes|cut short/),
    );
    const long = await reader().open(`${rawOrigin}/long`);
    await assert.rejects(
      readAll(long.stream),
      isCode("URL_READ_FAILED", false, /longer than its Content-Length/),
    );
  });

  test("no answer, or a body that stops, ends when the idle timer fires: URL_READ_FAILED, retried", async () => {
    const m = manualTimers();
    stalled = [];
    const waiting = reader({ timers: m.timers }).open(`${origin}/stall-headers`);
    await waitFor(() => stalled.length === 1, 10_000, "the request to arrive");
    m.last().fire();
    await assert.rejects(waiting, isCode("URL_READ_FAILED", false, /no bytes for 30 s/));

    const opened = await reader({ timers: m.timers }).open(`${origin}/stall-body`);
    const it = opened.stream[Symbol.asyncIterator]();
    assert.equal(((await it.next()).value as Buffer).length, 10);
    const next = it.next();
    m.last().fire();
    await assert.rejects(next, isCode("URL_READ_FAILED", false, /no bytes for/));
    for (const s of stalled) s.res.destroy();
  });

  describe("s3:// and gs:// through storage_urls", () => {
    let s3: Awaited<ReturnType<typeof startS3StandIn>>;
    let creds: { endpoint: string; access_key_id: string; secret_access_key: string };
    before(async () => {
      s3 = await startS3StandIn({ bucket: "docs" });
      creds = { endpoint: s3.endpoint, access_key_id: "AKIDTEST", secret_access_key: "secret" };
      s3.objects.set("reports/q3 plan.bin", { body, meta: {} });
    });
    after(() => s3.close());

    test("an object streams byte-identical by s3:// and by gs://", async () => {
      const r = reader({ storage: { s3: creds, gs: creds } });
      for (const url of ["s3://docs/reports/q3%20plan.bin", "gs://docs/reports/q3%20plan.bin"]) {
        const opened = await r.open(url);
        assert.equal(opened.size, body.length, url);
        assert.equal(sha(await readAll(opened.stream)), sha(body), url);
      }
    });

    test("a missing object is final; one over the cap is FILE_TOO_LARGE; no credentials is URL_READS_NOT_CONFIGURED", async () => {
      await assert.rejects(
        reader({ storage: { s3: creds } }).open("s3://docs/missing"),
        isCode("URL_READ_FAILED", true, /404/),
      );
      await assert.rejects(
        reader({ storage: { s3: creds }, maxBytes: 1000 }).open("s3://docs/reports/q3%20plan.bin"),
        isCode("FILE_TOO_LARGE", true),
      );
      await assert.rejects(
        reader({ storage: { s3: creds } }).open("gs://docs/reports/q3%20plan.bin"),
        isCode("URL_READS_NOT_CONFIGURED", true, /storage_urls\.gs/),
      );
    });

    test("an object whose body is cut short is URL_READ_FAILED, retried", async () => {
      const m = manualTimers();
      const cut = createServer((_req, res) => {
        res.setHeader("content-length", 1000);
        res.write(body.subarray(0, 100));
        setImmediate(() => res.destroy());
      });
      const endpoint = await listen(cut);
      try {
        const opened = await reader({ storage: { s3: { ...creds, endpoint } }, timers: m.timers }).open(
          "s3://docs/any",
        );
        await assert.rejects(readAll(opened.stream), isCode("URL_READ_FAILED", false));
      } finally {
        cut.closeAllConnections();
        cut.close();
      }
    });
  });
});

describe("rag_summary by {url} over HTTP", () => {
  let s: Stack;
  const document = `${"Longhaul reads URLs in steps. ".repeat(80)}\n\nThey stream through the SSRF guard.`;
  const docs = createServer((req, res) => {
    if (req.url === "/doc.txt") {
      res.setHeader("content-type", "text/plain");
      res.end(document);
    } else {
      res.statusCode = 302;
      res.setHeader("location", "http://169.254.169.254/latest/meta-data/");
      res.end();
    }
  });
  let origin: string;
  before(async () => {
    origin = await listen(docs);
    s = await startStack({ outbound: { allow_private_networks: true } });
  });
  after(async () => {
    await s.close();
    docs.close();
  });

  const run = async (url: string) => {
    const submitted = await s.api("/v1/tasks", { body: { type: "rag_summary", input: { url } } });
    assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
    return waitFor(
      async () => {
        const r = await s.api(`/v1/tasks/${submitted.body.task_id}`);
        return ["succeeded", "failed", "canceled", "timed_out"].includes(r.body.status) ? r.body : null;
      },
      60_000,
      "rag_summary to end",
    );
  };

  test("a document at a URL is streamed in a step, then summarized and chunked", async () => {
    const task = await run(`${origin}/doc.txt`);
    assert.equal(task.status, "succeeded", JSON.stringify(task.error));
    assert.ok(task.output.chunks >= 2);
  });

  test("a URL that redirects to the metadata address fails its step at once with URL_NOT_ALLOWED", async () => {
    const task = await run(`${origin}/elsewhere`);
    assert.equal(task.status, "failed");
    const read = task.steps.find((st: { id: string }) => st.id === "read-document");
    assert.equal(read.status, "failed");
    assert.equal(read.error.code, "URL_NOT_ALLOWED");
    assert.equal(read.attempts, 1, "not retried");
  });
});
