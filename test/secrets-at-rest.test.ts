import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { createCipheriv, randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import Database from "better-sqlite3";
import { Client } from "pg";
import { Webhook } from "standardwebhooks";
import { createLonghaul } from "../src/app.ts";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { demoTaskTypes } from "../src/demo/index.ts";
import { parseSecretKey, SecretBox, secretBoxFrom } from "../src/secrets/secret-box.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import type { Store } from "../src/store/store.ts";
import { quietLog, tempDir, waitFor } from "./helpers.ts";
import {
  dropSchemas,
  freshSchemaName,
  pgAvailableOrReport,
  pgBaseUrl,
  pgUnreachable,
  pgUrl,
} from "./pg-env.ts";
import { CLI_FROM_SOURCE } from "./processes.ts";

const KEY_A = randomBytes(32).toString("base64");
const KEY_B = randomBytes(32).toString("hex");
const idOf = (k: string) => new SecretBox([parseSecretKey(k, "k")]).activeKeyId;

/** `plain` sealed as versions before 0.3 did: `enc:v1:`, AES-256-GCM without associated data. */
function sealV1(key: string, plain: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", parseSecretKey(key, "k"), iv);
  const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final(), cipher.getAuthTag()]);
  return `enc:v1:${idOf(key)}:${iv.toString("base64url")}:${body.toString("base64url")}`;
}

/** The one value `sql` selects. */
function readValue(path: string, sql: string): string {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare(sql).pluck().get() as string;
  } finally {
    db.close();
  }
}

function writeRow(path: string, sql: string, ...params: string[]): void {
  const db = new Database(path);
  try {
    db.prepare(sql).run(...params);
  } finally {
    db.close();
  }
}

/** Runs the CLI from source with `env` added; resolves with its exit code and output. */
function runCli(args: string[], env: Record<string, string>) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [...CLI_FROM_SOURCE, ...args],
      { env: { ...process.env, ...env } },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}
const demoDir = tempDir();
after(() => demoDir.cleanup());

/** A receiver that keeps every delivery. */
async function startReceiver() {
  const hits: { headers: Record<string, string>; body: string }[] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => {
      body += c.toString("utf8");
    });
    req.on("end", () => {
      hits.push({
        headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
        body,
      });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    hits,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** One node on `store` with a tenant; the store is closed with it. */
async function node(store: Store, secretKeys: string[], tenantKey?: string) {
  const app = await createLonghaul({
    store,
    logger: quietLog(),
    secretKeys,
    taskTypes: demoTaskTypes(demoDir.dir),
    outbound: { allow_private_networks: true, retry_schedule_s: [0, 0.2] },
    worker: { idleMs: 100 },
  });
  const key = tenantKey ?? newApiKey();
  if (!tenantKey) await store.createTenant({ name: "t", keyHash: hashApiKey(key) });
  const url = await app.listen({ port: 0 });
  const api = async (path: string, body?: unknown) => {
    const r = await fetch(url + path, {
      method: body === undefined ? "GET" : "POST",
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : null };
  };
  return { app, key, api, close: () => app.close() };
}

/** Submits a task and waits for its task.created delivery to arrive; returns that delivery. */
async function deliveredOnce(n: Awaited<ReturnType<typeof node>>, rx: Receiver) {
  const before = rx.hits.length;
  const t = await n.api("/v1/tasks", { type: "demo.echo", input: { text: "x" } });
  assert.equal(t.status, 202, JSON.stringify(t.body));
  await waitFor(() => rx.hits.length > before, 10_000, "a delivery");
  return rx.hits.at(-1)!;
}

const verifies = (secret: string, hit: { headers: Record<string, string>; body: string }) => {
  try {
    new Webhook(secret).verify(hit.body, hit.headers);
    return true;
  } catch {
    return false;
  }
};

describe("secrets at rest (SQLite)", () => {
  let rx: Receiver;
  const tmp = tempDir();
  before(async () => {
    rx = await startReceiver();
  });
  after(async () => {
    await rx.close();
    tmp.cleanup();
  });

  test("with a key set, the raw rows hold no whsec_ secret and no token key secret, and deliveries verify", async () => {
    const path = join(tmp.dir, "sealed.db");
    const n = await node(new SqliteStore({ path }), [KEY_A]);
    try {
      const e = await n.api("/v1/webhook-endpoints", { url: rx.url, events: ["task.created"] });
      assert.equal(e.status, 201);
      assert.match(e.body.secret, /^whsec_/);
      const hit = await deliveredOnce(n, rx);
      assert.ok(verifies(e.body.secret, hit), "the delivery verifies with the secret shown at creation");
    } finally {
      await n.close();
    }
    const db = new Database(path, { readonly: true });
    const rows = db.prepare("SELECT secret FROM webhook_endpoints").all() as { secret: string }[];
    const meta = db.prepare("SELECT key, value FROM meta").all() as { key: string; value: string }[];
    const dump = JSON.stringify(db.prepare("SELECT * FROM webhook_endpoints").all());
    db.close();
    assert.equal(rows.length, 1);
    assert.match(rows[0]!.secret, /^enc:v2:[0-9a-f]{8}:/);
    assert.ok(!dump.includes("whsec_"));
    const tokenKeys = meta.find((m) => m.key === "tokens.keys");
    assert.match(tokenKeys!.value, /^enc:v2:/);
    assert.ok(!tokenKeys!.value.includes("base64:") && !tokenKeys!.value.includes("secret"));
  });

  test("plain rows from before a key are sealed at start; a start never moves a value to another key, `secrets reseal` does", async () => {
    const path = join(tmp.dir, "rotate.db");
    const raw = () => {
      const db = new Database(path, { readonly: true });
      const secret = (db.prepare("SELECT secret FROM webhook_endpoints").get() as { secret: string }).secret;
      const tokens = (
        db.prepare("SELECT value FROM meta WHERE key = 'tokens.keys'").get() as { value: string }
      ).value;
      db.close();
      return { secret, tokens };
    };

    // No key: stored as given (what older versions did).
    let n = await node(new SqliteStore({ path }), []);
    const e = await n.api("/v1/webhook-endpoints", { url: rx.url, events: ["task.created"] });
    const tenantKey = n.key;
    await n.close();
    assert.equal(raw().secret, e.body.secret);

    // Key A: the old plain rows are sealed under A and still sign with the same secret.
    n = await node(new SqliteStore({ path }), [KEY_A], tenantKey);
    assert.ok(verifies(e.body.secret, await deliveredOnce(n, rx)));
    await n.close();
    assert.ok(raw().secret.startsWith(`enc:v2:${idOf(KEY_A)}:`));
    assert.ok(raw().tokens.startsWith(`enc:v2:${idOf(KEY_A)}:`));

    // B writes, A still read: the start leaves every value under A (other nodes may not list B yet).
    n = await node(new SqliteStore({ path }), [KEY_B, KEY_A], tenantKey);
    assert.ok(verifies(e.body.secret, await deliveredOnce(n, rx)));
    await n.close();
    assert.ok(raw().secret.startsWith(`enc:v2:${idOf(KEY_A)}:`));
    assert.ok(raw().tokens.startsWith(`enc:v2:${idOf(KEY_A)}:`));

    // The operator's last step: `longhaul secrets reseal` with B writing moves everything to B.
    const cli = await runCli(["secrets", "reseal"], {
      LONGHAUL_DATABASE_URL: `sqlite:${path}`,
      LONGHAUL_SECRET_KEY: KEY_B,
      LONGHAUL_SECRET_KEYS: KEY_A,
    });
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, new RegExp(`Resealed 2 stored values: .*key ${idOf(KEY_B)}`));
    assert.ok(raw().secret.startsWith(`enc:v2:${idOf(KEY_B)}:`));
    assert.ok(raw().tokens.startsWith(`enc:v2:${idOf(KEY_B)}:`));

    // A can go now.
    n = await node(new SqliteStore({ path }), [KEY_B], tenantKey);
    assert.ok(verifies(e.body.secret, await deliveredOnce(n, rx)));
    await n.close();

    // Without B, or without any key, the start is refused with what to do.
    for (const keys of [[KEY_A], []]) {
      const store = new SqliteStore({ path });
      await assert.rejects(
        createLonghaul({ store, logger: quietLog(), secretKeys: keys }),
        (err: Error & { code?: string }) => {
          assert.equal(err.code, "CONFIG_INVALID");
          assert.match(err.message, new RegExp(`key ${idOf(KEY_B)}`));
          return true;
        },
      );
      await store.close();
    }
    // And so is a reseal that lacks a key some value is under: nothing is changed.
    const refused = await runCli(["secrets", "reseal"], {
      LONGHAUL_DATABASE_URL: `sqlite:${path}`,
      LONGHAUL_SECRET_KEY: KEY_A,
      LONGHAUL_SECRET_KEYS: "",
    });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, new RegExp(`key ${idOf(KEY_B)}.*\\(CONFIG_INVALID\\)`, "s"));
    assert.ok(raw().secret.startsWith(`enc:v2:${idOf(KEY_B)}:`));
  });

  test("a value sealed before places were bound (enc:v1) opens, and the start rebinds it under its own key", async () => {
    const path = join(tmp.dir, "v1.db");
    let n = await node(new SqliteStore({ path }), [KEY_A]);
    const e = await n.api("/v1/webhook-endpoints", { url: rx.url, events: ["task.created"] });
    const tenantKey = n.key;
    await n.close();
    // Rewrite both secrets in the format of earlier versions, under A, then under B (listed second).
    const tokens = new SecretBox([parseSecretKey(KEY_A, "a")]).open(
      readValue(path, "SELECT value FROM meta WHERE key = 'tokens.keys'"),
      "meta:tokens.keys:value",
    );
    writeRow(path, "UPDATE webhook_endpoints SET secret = ?", sealV1(KEY_B, e.body.secret));
    writeRow(path, "UPDATE meta SET value = ? WHERE key = 'tokens.keys'", sealV1(KEY_A, tokens));

    n = await node(new SqliteStore({ path }), [KEY_A, KEY_B], tenantKey);
    assert.ok(verifies(e.body.secret, await deliveredOnce(n, rx)), "the old-format secret signs");
    await n.close();
    const secret = readValue(path, "SELECT secret FROM webhook_endpoints");
    const meta = readValue(path, "SELECT value FROM meta WHERE key = 'tokens.keys'");
    assert.ok(secret.startsWith(`enc:v2:${idOf(KEY_B)}:`), "rebound, and still under the key it was under");
    assert.ok(meta.startsWith(`enc:v2:${idOf(KEY_A)}:`));
    const box = new SecretBox([parseSecretKey(KEY_A, "a"), parseSecretKey(KEY_B, "b")]);
    assert.equal(box.open(secret, `webhook_endpoints:${e.body.id}:secret`), e.body.secret);
    assert.equal(box.open(meta, "meta:tokens.keys:value"), tokens);
  });

  test("a sealed secret copied into another endpoint's row does not open there: the delivery says so", async () => {
    const path = join(tmp.dir, "moved.db");
    const n = await node(new SqliteStore({ path }), [KEY_A]);
    try {
      const first = await n.api("/v1/webhook-endpoints", { url: `${rx.url}?e=1`, events: ["task.created"] });
      const second = await n.api("/v1/webhook-endpoints", { url: `${rx.url}?e=2`, events: ["task.created"] });
      const db = new Database(path);
      db.prepare(
        "UPDATE webhook_endpoints SET secret = (SELECT secret FROM webhook_endpoints WHERE id = ?) WHERE id = ?",
      ).run(first.body.id, second.body.id);
      db.close();
      const hit = await deliveredOnce(n, rx);
      assert.ok(verifies(first.body.secret, hit), "the endpoint the secret was sealed for still signs");
      const [d] = await waitFor(async () => {
        const r = await n.api(`/v1/webhook-endpoints/${second.body.id}/deliveries`);
        return r.body.data[0]?.last_error ? r.body.data : null;
      });
      assert.equal(d.last_error.code, "SECRET_UNREADABLE");
      assert.match(d.last_error.message, new RegExp(`webhook_endpoints:${second.body.id}:secret`));
      assert.match(d.last_error.message, /sealed for another row or column/);
      assert.ok(!d.last_error.message.includes("whsec_"));
    } finally {
      await n.close();
    }
  });

  test("longhaul serve refuses to start with generated token keys and no encryption key", async () => {
    const config = join(tmp.dir, "serve.config.json");
    writeFileSync(config, JSON.stringify({ public_url: "http://127.0.0.1:1" }));
    const child = spawn(
      process.execPath,
      [...CLI_FROM_SOURCE, "serve", "--port", "0", "--host", "127.0.0.1", "--config", config],
      {
        env: {
          ...process.env,
          LONGHAUL_SECRET_KEY: "",
          LONGHAUL_SECRET_KEYS: "",
          LONGHAUL_DATABASE_URL: `sqlite:${join(tmp.dir, "serve.db")}`,
        },
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    let stderr = "";
    child.stderr!.on("data", (c: Buffer) => {
      stderr += c.toString("utf8");
    });
    const code = await new Promise((r) => child.once("exit", r));
    assert.equal(code, 1);
    assert.match(stderr, /No LONGHAUL_SECRET_KEY is set.*tokens\.keys.*\(CONFIG_INVALID\)/s);
  });
});

describe("the secret box", () => {
  const AT = "webhook_endpoints:we_1:secret";
  test("seals with a random IV, opens with any listed key, and refuses an altered value", () => {
    const box = new SecretBox([parseSecretKey(KEY_A, "a")]);
    const a = box.seal("whsec_abc", AT);
    assert.notEqual(a, box.seal("whsec_abc", AT));
    assert.equal(box.open(a, AT), "whsec_abc");
    assert.equal(box.open("whsec_plain", AT), "whsec_plain");
    const last = a.at(-2) === "A" ? "B" : "A";
    assert.throws(() => box.open(`${a.slice(0, -2)}${last}${a.at(-1)}`, AT), { code: "CONFIG_INVALID" });
    const both = new SecretBox([parseSecretKey(KEY_B, "b"), parseSecretKey(KEY_A, "a")]);
    assert.equal(both.open(a, AT), "whsec_abc");
    assert.ok(both.seal("x", AT).startsWith(`enc:v2:${both.activeKeyId}:`));
  });

  test("a sealed value opens only at the place it was sealed for; an old-format one anywhere", () => {
    const box = new SecretBox([parseSecretKey(KEY_A, "a")]);
    const sealed = box.seal("whsec_abc", AT);
    for (const elsewhere of [
      "webhook_endpoints:we_2:secret",
      "meta:tokens.keys:value",
      "webhook_endpoints:we_1:url",
    ]) {
      assert.throws(
        () => box.open(sealed, elsewhere),
        (err: Error & { code?: string }) => {
          assert.equal(err.code, "CONFIG_INVALID");
          assert.ok(err.message.includes(`stored at ${elsewhere}`), err.message);
          assert.match(err.message, /sealed for another row or column/);
          assert.ok(!err.message.includes("whsec_abc"));
          return true;
        },
      );
    }
    const old = sealV1(KEY_A, "whsec_abc");
    assert.equal(box.open(old, "webhook_endpoints:we_9:secret"), "whsec_abc");
    const upgraded = box.upgrade(old, AT);
    assert.ok(upgraded.startsWith(`enc:v2:${box.activeKeyId}:`));
    assert.equal(box.open(upgraded, AT), "whsec_abc");
    assert.equal(box.upgrade(upgraded, AT), upgraded, "a bound value is left as it is");
  });

  test("upgrade keeps each value under its key; reseal moves it to the writing key", () => {
    const a = new SecretBox([parseSecretKey(KEY_A, "a")]);
    const ba = new SecretBox([parseSecretKey(KEY_B, "b"), parseSecretKey(KEY_A, "a")]);
    const underA = a.seal("s", AT);
    assert.equal(ba.upgrade(underA, AT), underA);
    assert.ok(ba.upgrade("plain", AT).startsWith(`enc:v2:${ba.activeKeyId}:`));
    const moved = ba.reseal(underA, AT);
    assert.ok(moved.startsWith(`enc:v2:${ba.activeKeyId}:`));
    assert.equal(ba.open(moved, AT), "s");
    assert.equal(ba.reseal(moved, AT), moved);
    assert.throws(
      () => a.upgrade(moved, AT),
      (err: Error) => err.message.includes(`key ${ba.activeKeyId}`),
    );
    assert.throws(() => ba.reseal(underA, "meta:x:value"), { code: "CONFIG_INVALID" });
  });

  test("keys come from LONGHAUL_SECRET_KEY then LONGHAUL_SECRET_KEYS, as base64 or hex of 32 bytes", () => {
    const box = secretBoxFrom(undefined, {
      LONGHAUL_SECRET_KEY: KEY_B,
      LONGHAUL_SECRET_KEYS: `${KEY_A}, ${KEY_B}`,
    });
    assert.equal(box.activeKeyId, new SecretBox([parseSecretKey(KEY_B, "b")]).activeKeyId);
    assert.equal(
      box.open(new SecretBox([parseSecretKey(KEY_A, "a")]).seal("s", "meta:k:value"), "meta:k:value"),
      "s",
    );
    assert.equal(secretBoxFrom(undefined, {}).enabled, false);
    for (const bad of ["short", randomBytes(16).toString("base64"), "z".repeat(64)]) {
      assert.throws(
        () => secretBoxFrom(undefined, { LONGHAUL_SECRET_KEY: bad }),
        (err: Error & { code?: string }) => {
          assert.equal(err.code, "CONFIG_INVALID");
          assert.match(err.message, /LONGHAUL_SECRET_KEY is not 32 bytes/);
          assert.ok(!err.message.includes(bad));
          return true;
        },
      );
    }
  });
});

const unreachable = await pgUnreachable();
if (pgAvailableOrReport(unreachable, "secrets at rest (PostgreSQL)")) {
  describe("secrets at rest (PostgreSQL)", () => {
    const schemas: string[] = [];
    let rx: Receiver;
    before(async () => {
      rx = await startReceiver();
    });
    after(async () => {
      await rx.close();
      await dropSchemas(schemas);
    });

    test("with a key set, the raw rows hold no whsec_ secret and no token key secret, and deliveries verify", async () => {
      const schema = freshSchemaName("lh_secrets");
      schemas.push(schema);
      const n = await node(new PostgresStore({ url: pgUrl(schema) }), [KEY_A]);
      let secret: string;
      try {
        const e = await n.api("/v1/webhook-endpoints", { url: rx.url, events: ["task.created"] });
        assert.equal(e.status, 201);
        secret = e.body.secret;
        assert.ok(verifies(secret, await deliveredOnce(n, rx)));
      } finally {
        await n.close();
      }
      const client = new Client({ connectionString: pgBaseUrl });
      await client.connect();
      try {
        const rows = await client.query(`SELECT * FROM "${schema}".webhook_endpoints`);
        const meta = await client.query(`SELECT value FROM "${schema}".meta WHERE key = 'tokens.keys'`);
        assert.equal(rows.rows.length, 1);
        assert.match(rows.rows[0].secret, /^enc:v2:/);
        assert.ok(!JSON.stringify(rows.rows).includes("whsec_"));
        assert.match(meta.rows[0].value, /^enc:v2:/);
        assert.ok(!meta.rows[0].value.includes("base64:"));
      } finally {
        await client.end();
      }
    });
  });
}
