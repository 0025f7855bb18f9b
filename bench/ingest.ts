// Webhook ingest throughput per verification scheme over real HTTP on loopback, side by side in
// one run with the same server answering a no-op route (the cost of HTTP alone: the ceiling).
// BENCH_REQUESTS (default 2000 per round) and BENCH_CONCURRENCY (default 32) size the load.
//
// The server (longhaul's API role on a SQLite file in a temp dir, no worker) runs in a worker
// thread so that it does not share a thread with the load generator. Every delivery is distinct
// and signed ahead of its round, and must be answered 200 and recorded. The ceiling route reads
// the body as ingress does, then answers without verifying or recording. "verify alone" is the
// scheme's verifier called in process, without HTTP or store: the share of the signature check.
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import { signGithub } from "../src/ingress/github.ts";
import { signGoogHmac } from "../src/ingress/goog-hmac.ts";
import { signSlack } from "../src/ingress/slack.ts";
import { buildSource, type SourceConfig } from "../src/ingress/sources.ts";
import { signStripe } from "../src/ingress/stripe.ts";
import { signStandardWebhook } from "../src/webhooks/standard-webhooks.ts";
import { fmt, type LoadResult, load, table } from "./load.ts";

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const WHSEC = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const SECRET = "a shared secret for the ingest bench";
const ISSUER = "https://sender.example";
const AUDIENCE = "https://hooks.example/hooks/jwt";
const NOOP = "/bench/noop";

type Signer = (body: Buffer, nowS: number, seq: number) => Promise<Record<string, string>>;

function sourcesFor(jwk: JWK): Record<string, SourceConfig> {
  const hmac = (scheme: string): SourceConfig => ({ provider: "sim", scheme, secrets: [SECRET] });
  return {
    "standard-webhooks": { provider: "sim", secrets: [WHSEC] },
    stripe: hmac("stripe"),
    github: hmac("github"),
    "goog-hmac": hmac("goog-hmac"),
    slack: hmac("slack"),
    jwt: { provider: "sim", scheme: "jwt", jwks: { keys: [jwk] }, issuer: ISSUER, audience: AUDIENCE },
  };
}

if (isMainThread) await main();
else await serve(workerData as { jwk: JWK });

/** The server thread: longhaul's API with one source per scheme, and the ceiling route. */
async function serve({ jwk }: { jwk: JWK }): Promise<void> {
  const { pino } = await import("pino");
  const { createLonghaul } = await import("../src/app.ts");
  const { SqliteStore } = await import("../src/store/sqlite/sqlite-store.ts");
  const dir = mkdtempSync(join(tmpdir(), "longhaul-bench-"));
  const app = await createLonghaul({
    store: new SqliteStore({ path: join(dir, "longhaul.db") }),
    role: "api",
    logger: pino({ level: "silent" }),
    sources: sourcesFor(jwk),
    // Every delivery comes from one address; a larger BENCH_REQUESTS would pass the default rate.
    limits: { hooks_per_min: 0 },
  });
  app.server.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer" }, (_req, body, done) => done(null, body));
    scope.post(NOOP, async () => ({ received: true, duplicate: false }));
  });
  parentPort!.postMessage({ url: await app.listen({ port: 0 }) });
  parentPort!.once("message", async () => {
    await app.close();
    rmSync(dir, { recursive: true, force: true });
    parentPort!.postMessage("closed");
  });
}

async function main(): Promise<void> {
  const { privateKey, publicKey } = await generateKeyPair("ES256");
  const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256" };
  const signers: Record<string, Signer> = {
    "standard-webhooks": async (body, nowS, seq) => ({
      "webhook-id": `msg_${seq}`,
      "webhook-timestamp": String(nowS),
      "webhook-signature": signStandardWebhook({ id: `msg_${seq}`, timestampS: nowS, body, secret: WHSEC }),
    }),
    stripe: async (body, nowS) => ({
      "stripe-signature": signStripe({ timestampS: nowS, body, secret: SECRET }),
    }),
    github: async (body, _nowS, seq) => ({
      "x-hub-signature-256": signGithub({ body, secret: SECRET }),
      "x-github-delivery": `delivery-${seq}`,
    }),
    "goog-hmac": async (body, nowS) => ({
      "x-goog-signature": signGoogHmac({ timestampS: nowS, body, secret: SECRET }),
      "x-goog-timestamp": String(nowS),
    }),
    slack: async (body, nowS) => ({
      "x-slack-signature": signSlack({ timestampS: nowS, body, secret: SECRET }),
      "x-slack-request-timestamp": String(nowS),
    }),
    jwt: async (body, nowS, seq) => {
      const token = await new SignJWT({ body_sha256: createHash("sha256").update(body).digest("hex") })
        .setProtectedHeader({ alg: "ES256", kid: "k1" })
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setIssuedAt(nowS)
        .setExpirationTime(nowS + 600)
        .setJti(`msg-${seq}`)
        .sign(privateKey);
      return { authorization: `Bearer ${token}` };
    },
  };

  // A worker thread does not inherit the TypeScript loader: register it, then load this file.
  const boot = `import("tsx/esm/api").then((tsx) => { tsx.register(); return import(${JSON.stringify(import.meta.url)}); });`;
  const server = new Worker(boot, { eval: true, workerData: { jwk } });
  const { url } = await new Promise<{ url: string }>((resolve, reject) => {
    server.once("message", resolve);
    server.once("error", reject);
  });

  let seq = 0;
  /** A provider event of a few hundred bytes, distinct per delivery so that none is a duplicate. */
  const bodyOf = () =>
    Buffer.from(
      JSON.stringify({
        id: `evt_${++seq}`,
        event_id: `Ev${seq}`,
        type: "job.succeeded",
        created_at: new Date().toISOString(),
        data: { job_id: `job_${seq}`, output: { text: "x".repeat(200) }, usage: { total_tokens: 321 } },
      }),
    );
  const measure = async (name: string, n: number): Promise<LoadResult> => {
    const nowS = Math.floor(Date.now() / 1000);
    const list: { path: string; headers: Record<string, string>; body: Uint8Array<ArrayBuffer> }[] = [];
    for (let i = 0; i < n; i++) {
      const body = bodyOf();
      const signed = name === "ceiling" ? {} : await signers[name]!(body, nowS, seq);
      list.push({
        path: name === "ceiling" ? NOOP : `/hooks/${name}`,
        headers: { "content-type": "application/json", ...signed },
        body: new Uint8Array(body),
      });
    }
    return load(n, CONCURRENCY, async (i) => {
      const d = list[i]!;
      const res = await fetch(url + d.path, { method: "POST", headers: d.headers, body: d.body });
      await res.arrayBuffer();
      return res.status === 200;
    });
  };

  const cases = ["ceiling", ...Object.keys(signers)];
  // Warm the JIT, the connection pool and the SQLite file, then interleave rounds so that
  // drift hits every case alike; the median round counts.
  for (const name of cases) await measure(name, 500);
  const runs = new Map<string, LoadResult[]>(cases.map((c) => [c, []]));
  for (let round = 0; round < 3; round++) {
    for (const name of cases) runs.get(name)!.push(await measure(name, REQUESTS));
  }
  const median = (name: string) => [...runs.get(name)!].sort((a, b) => a.perSecond - b.perSecond)[1]!;
  const ceiling = median("ceiling").perSecond;
  const sources = sourcesFor(jwk);
  const rows: Record<string, string | number>[] = [];
  for (const name of cases) {
    const r = median(name);
    const verify = name === "ceiling" ? "–" : fmt(await verifyAlone(name, sources[name]!, signers[name]!));
    rows.push({
      case: name === "ceiling" ? "ceiling: no-op route" : name,
      "req/s": fmt(r.perSecond, 0),
      "p50 ms": fmt(r.p50Ms),
      "p99 ms": fmt(r.p99Ms),
      "vs ceiling": fmt(r.perSecond / ceiling, 2),
      "verify alone µs": verify,
      errors: r.errors,
    });
  }
  server.postMessage("close");
  await new Promise((resolve) => server.once("message", resolve));
  await server.terminate();

  console.log(
    `\n${REQUESTS} signed deliveries per round, ${CONCURRENCY} concurrent, loopback, server in its own thread, SQLite WAL synced before each answer (node ${process.version}, ${cpus().length} CPUs)\n`,
  );
  console.log(table(rows));
  console.log("\nmedian of 3 interleaved rounds; verify alone: the verifier in process, no HTTP or store");
}

/** Mean microseconds of one in-process verification, over a second's worth of calls at most. */
async function verifyAlone(name: string, config: SourceConfig, sign: Signer): Promise<number> {
  const verifier = buildSource(name, config).verifier;
  const body = Buffer.from(JSON.stringify({ id: "evt_v", type: "job.succeeded", data: { job_id: "j" } }));
  const nowS = Math.floor(Date.now() / 1000);
  const req = { headers: await sign(body, nowS, 0), body, nowMs: nowS * 1000 };
  for (let i = 0; i < 200; i++) await verifier.verify(req);
  let n = 0;
  const start = performance.now();
  while (n < 20_000 && performance.now() - start < 1000) {
    // A fresh body each time, as on the wire: a scheme that reads the event id parses it anew.
    await verifier.verify({ ...req, body: Buffer.from(body) });
    n++;
  }
  return ((performance.now() - start) * 1000) / n;
}
