import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import Database from "better-sqlite3";
import { Client } from "pg";
import { Webhook } from "standardwebhooks";
import { createLonghaul, type Longhaul } from "../src/app.ts";
import { resealUnderWritingKey } from "../src/cli/secrets.ts";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { demoTaskTypes } from "../src/demo/index.ts";
import { parseSecretKey, SecretBox } from "../src/secrets/secret-box.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import type { Store } from "../src/store/store.ts";
import { quietLog, tempDir } from "./helpers.ts";
import {
  dropSchemas,
  freshSchemaName,
  pgAvailableOrReport,
  pgBaseUrl,
  pgUnreachable,
  pgUrl,
} from "./pg-env.ts";

/**
 * Changing LONGHAUL_SECRET_KEY on a deployment of two nodes (README "Secrets at rest"):
 * phase 1 lists the new key on every node for reading, phase 2 makes it the writing key, and
 * `longhaul secrets reseal` then moves what is stored to it. At every step each node still
 * signs every endpoint's deliveries correctly and accepts the callback links the other minted.
 */
const OLD = randomBytes(32).toString("base64");
const NEW = randomBytes(32).toString("hex");
const idOf = (k: string) => new SecretBox([parseSecretKey(k, "k")]).activeKeyId!;
const boxOf = (keys: string[]) => new SecretBox(keys.map((k) => parseSecretKey(k, "k")));
const demoDir = tempDir();
after(() => demoDir.cleanup());

interface Hit {
  path: string;
  headers: Record<string, string>;
  body: string;
}

let hits: Hit[] = [];
let receiver: http.Server;
let base = "";
before(async () => {
  receiver = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => {
      body += c.toString("utf8");
    });
    req.on("end", () => {
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      hits.push({ path: req.url ?? "/", headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((r) => receiver.close(() => r())));

/** Where the nodes keep their data: both at once (PostgreSQL) or one after the other (a SQLite file). */
interface Deployment {
  concurrent: boolean;
  openStore(): Store;
  /** Every stored secret as it is in the database. */
  stored(): Promise<string[]>;
}

interface Node {
  name: string;
  keys: string[];
  app: Longhaul | null;
}

function rollout(d: Deployment, prefix: string) {
  const apiKey = newApiKey();
  let tenantMade = false;
  const endpoints: { path: string; id: string; secrets: string[] }[] = [];
  let pendingLink: { url: string; from: string } | null = null;

  const start = async (n: Node) => {
    const store = d.openStore();
    n.app = await createLonghaul({
      store,
      logger: quietLog(),
      secretKeys: n.keys,
      publicUrl: "http://longhaul.test",
      taskTypes: demoTaskTypes(demoDir.dir),
      outbound: { allow_private_networks: true, retry_schedule_s: [0] },
    });
    if (!tenantMade) {
      await store.createTenant({ name: "rollout", keyHash: hashApiKey(apiKey) });
      tenantMade = true;
    }
  };
  const stop = async (n: Node) => {
    await n.app?.close();
    n.app = null;
  };
  /** Runs `fn` on the node: open all along when the deployment is concurrent, else just for it. */
  const use = async <T>(n: Node, fn: (app: Longhaul) => Promise<T>): Promise<T> => {
    if (!n.app) await start(n);
    try {
      return await fn(n.app!);
    } finally {
      if (!d.concurrent) await stop(n);
    }
  };
  const restart = async (n: Node, keys: string[]) => {
    await stop(n);
    n.keys = keys;
    if (d.concurrent) await start(n);
  };
  const call = async (app: Longhaul, method: string, path: string, body?: unknown) => {
    const res = await app.fetch(
      new Request(`http://longhaul.test${path}`, {
        method,
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    );
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };

  /** The node delivers to every endpoint, signed with each of its secrets, and accepts the other node's link. */
  const readsEverything = (n: Node) =>
    use(n, async (app) => {
      const from = hits.length;
      const t = await call(app, "POST", "/v1/tasks", { type: "demo.echo", input: { text: "x" } });
      assert.equal(t.status, 202, JSON.stringify(t.body));
      await app.drain();
      for (const e of endpoints) {
        const hit = hits.slice(from).find((h) => h.path === e.path);
        assert.ok(hit, `${n.name} (${n.keys.map(idOf)}) delivered to ${e.path}`);
        for (const secret of e.secrets) new Webhook(secret).verify(hit.body, hit.headers);
        assert.equal(hit.headers["webhook-signature"]!.split(" ").length, e.secrets.length);
      }
      if (pendingLink) {
        const r = await app.fetch(new Request(pendingLink.url, { method: "POST", body: '{"ok":true}' }));
        assert.equal(
          r.status,
          200,
          `${n.name} accepts the link ${pendingLink.from} minted: ${await r.text()}`,
        );
      }
      const cb = await call(app, "POST", "/v1/tasks", { type: "demo.callback", input: {} });
      await app.drain();
      const task = await call(app, "GET", `/v1/tasks/${cb.body.task_id}`);
      pendingLink = { url: task.body.steps[0].callback_url, from: n.name };
      assert.ok(pendingLink.url, JSON.stringify(task.body));
    });
  const keyIdsStored = async () =>
    [...new Set((await d.stored()).map((v) => /^enc:v2:([0-9a-f]{8}):/.exec(v)?.[1] ?? v))].sort();

  return async () => {
    const a: Node = { name: "A", keys: [OLD], app: null };
    const b: Node = { name: "B", keys: [OLD], app: null };
    if (d.concurrent) await Promise.all([start(a), start(b)]);
    try {
      const first = await use(a, (app) =>
        call(app, "POST", "/v1/webhook-endpoints", {
          url: `${base}/${prefix}/one`,
          events: ["task.created"],
        }),
      );
      assert.equal(first.status, 201);
      endpoints.push({ path: `/${prefix}/one`, id: first.body.id, secrets: [first.body.secret] });
      await readsEverything(a);
      await readsEverything(b);

      // Phase 1: every node lists the new key for reading; the old one still writes.
      await restart(a, [OLD, NEW]);
      await readsEverything(a);
      await readsEverything(b);
      await restart(b, [OLD, NEW]);
      await readsEverything(a);
      await readsEverything(b);
      assert.deepEqual(await keyIdsStored(), [idOf(OLD)]);

      // Phase 2: the new key writes. Starting moves nothing, so a node still on phase 1 (or
      // one that never got there) reads all that was stored before.
      await restart(a, [NEW, OLD]);
      await readsEverything(b);
      assert.deepEqual(await keyIdsStored(), [idOf(OLD)], "a start does not reseal under another key");
      // What A writes now is under the new key: a new endpoint, and a rotation of the first.
      await use(a, async (app) => {
        const second = await call(app, "POST", "/v1/webhook-endpoints", {
          url: `${base}/${prefix}/two`,
          events: ["task.created"],
        });
        assert.equal(second.status, 201);
        endpoints.push({ path: `/${prefix}/two`, id: second.body.id, secrets: [second.body.secret] });
        const rotated = await call(app, "POST", `/v1/webhook-endpoints/${first.body.id}/rotate-secret`, {
          expire_previous_in_s: 3600,
        });
        assert.equal(rotated.status, 200);
        endpoints[0]!.secrets.unshift(rotated.body.secret);
      });
      assert.deepEqual(await keyIdsStored(), [idOf(OLD), idOf(NEW)].sort());
      await readsEverything(b); // B writes with the old key and reads the new one
      await readsEverything(a);
      // A node that skipped phase 1 cannot read the new values: it refuses to start, naming the key.
      const skipped = d.openStore();
      await assert.rejects(
        createLonghaul({ store: skipped, logger: quietLog(), secretKeys: [OLD] }),
        (err: Error & { code?: string }) => err.code === "CONFIG_INVALID" && err.message.includes(idOf(NEW)),
      );
      await skipped.close();
      await restart(b, [NEW, OLD]);
      await readsEverything(a);
      await readsEverything(b);

      // Every node writes with the new key: reseal once, then the old key can go.
      const store = d.openStore();
      await store.migrate();
      await resealUnderWritingKey(store, boxOf([NEW, OLD]));
      await store.close();
      assert.deepEqual(await keyIdsStored(), [idOf(NEW)]);
      await restart(a, [NEW]);
      await restart(b, [NEW]);
      await readsEverything(a);
      await readsEverything(b);
    } finally {
      await Promise.all([stop(a), stop(b)]);
    }
  };
}

const unreachable = await pgUnreachable();

describe("changing the encryption key on two nodes", () => {
  const tmp = tempDir();
  after(() => {
    hits = [];
    tmp.cleanup();
  });

  test("SQLite: one file, the nodes opened in turn", async () => {
    const path = join(tmp.dir, "rollout.db");
    await rollout(
      {
        concurrent: false,
        openStore: () => new SqliteStore({ path }),
        stored: async () => {
          const db = new Database(path, { readonly: true });
          try {
            return storedSecrets(
              db.prepare("SELECT secret, previous_secrets FROM webhook_endpoints").all() as EndpointSecrets[],
              db.prepare("SELECT value FROM meta WHERE key = 'tokens.keys'").pluck().all() as string[],
            );
          } finally {
            db.close();
          }
        },
      },
      "sqlite",
    )();
  });

  if (pgAvailableOrReport(unreachable, "the key rollout on PostgreSQL")) {
    test("PostgreSQL: both nodes up, restarted one at a time", async () => {
      const schema = freshSchemaName("lh_rollout");
      const client = new Client({ connectionString: pgBaseUrl });
      await client.connect();
      try {
        await rollout(
          {
            concurrent: true,
            openStore: () => new PostgresStore({ url: pgUrl(schema) }),
            stored: async () =>
              storedSecrets(
                (await client.query(`SELECT secret, previous_secrets FROM "${schema}".webhook_endpoints`))
                  .rows,
                (await client.query(`SELECT value FROM "${schema}".meta WHERE key = 'tokens.keys'`)).rows.map(
                  (r) => r.value,
                ),
              ),
          },
          "postgres",
        )();
      } finally {
        await client.end();
        await dropSchemas([schema]);
      }
    });
  }
});

interface EndpointSecrets {
  secret: string;
  previous_secrets: string;
}

const storedSecrets = (endpoints: EndpointSecrets[], meta: string[]) => [
  ...endpoints.flatMap((e) => [
    e.secret,
    ...(JSON.parse(e.previous_secrets) as { secret: string }[]).map((p) => p.secret),
  ]),
  ...meta,
];
