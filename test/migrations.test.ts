import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import Database from "better-sqlite3";
import { Client } from "pg";
import { readMigrations, renderMigration } from "../src/store/migrations.ts";
import { tempDir } from "./helpers.ts";
import { dropSchemas, freshSchemaName, pgAvailableOrReport, pgBaseUrl, pgUnreachable } from "./pg-env.ts";

const tmp = tempDir();
after(tmp.cleanup);

test("tokens render per dialect", () => {
  const text =
    "CREATE TABLE t (id {id} PRIMARY KEY, at {bigint}, n {int}, on_ {bool} DEFAULT {true}, off {bool} DEFAULT {false}, b {bytes}, note text) {without_rowid};";
  assert.equal(
    renderMigration(text, "sqlite", "t.sql"),
    "CREATE TABLE t (id TEXT PRIMARY KEY, at INTEGER, n INTEGER, on_ INTEGER DEFAULT 1, off INTEGER DEFAULT 0, b BLOB, note text) WITHOUT ROWID;",
  );
  assert.equal(
    renderMigration(text, "postgres", "t.sql"),
    'CREATE TABLE t (id text COLLATE "C" PRIMARY KEY, at bigint, n integer, on_ boolean DEFAULT true, off boolean DEFAULT false, b bytea, note text) ;',
  );
  assert.equal(
    renderMigration("CREATE TABLE q (seq {serial});", "sqlite", "q.sql"),
    "CREATE TABLE q (seq INTEGER PRIMARY KEY AUTOINCREMENT);",
  );
  assert.equal(
    renderMigration("CREATE TABLE q (seq {serial});", "postgres", "q.sql"),
    "CREATE TABLE q (seq bigserial PRIMARY KEY);",
  );
  // Braces that are not a {word} are SQL, not tokens.
  assert.equal(renderMigration("DEFAULT '{}'", "postgres", "d.sql"), "DEFAULT '{}'");
});

test("a line marked for one dialect is kept, unmarked, for it and dropped for the other", () => {
  const text = [
    "-- both",
    "--sqlite: CREATE INDEX a ON t (x);",
    "  --postgres: CREATE UNIQUE INDEX a ON t (x);",
    "SELECT 1;",
  ].join("\n");
  assert.equal(renderMigration(text, "sqlite", "m.sql"), "-- both\nCREATE INDEX a ON t (x);\nSELECT 1;");
  assert.equal(
    renderMigration(text, "postgres", "m.sql"),
    "-- both\n  CREATE UNIQUE INDEX a ON t (x);\nSELECT 1;",
  );
});

test("an unknown token or dialect prefix throws, naming the file", () => {
  for (const dialect of ["sqlite", "postgres"] as const) {
    assert.throws(
      () => renderMigration("CREATE TABLE t (a {text});", dialect, "012_x.sql"),
      /012_x\.sql: unknown token \{text\}/,
    );
    assert.throws(
      () => renderMigration("CREATE TABLE t (a {constructor});", dialect, "x.sql"),
      /unknown token/,
    );
    assert.throws(
      () => renderMigration("--mysql: SELECT 1;", dialect, "x.sql"),
      /unknown dialect prefix --mysql:/,
    );
  }
  const dir = join(tmp.dir, "bad");
  mkdirSync(dir);
  writeFileSync(join(dir, "001_init.sql"), "CREATE TABLE t (a {id});\n");
  writeFileSync(join(dir, "002_more.sql"), "ALTER TABLE t ADD COLUMN b {bogus};\n");
  assert.throws(
    () => readMigrations("sqlite", pathToFileURL(`${dir}/`)),
    /002_more\.sql: unknown token \{bogus\}/,
  );
});

test("the migrations render completely for both dialects, with the same numbers and names", () => {
  const sqlite = readMigrations("sqlite");
  const postgres = readMigrations("postgres");
  assert.ok(sqlite.length >= 11);
  // Numbers are reserved for work in progress, so one may land before a lower one: strictly
  // increasing, from 1, each number once.
  const versions = sqlite.map((m) => m.version);
  assert.equal(versions[0], 1);
  assert.ok(
    versions.every((v, i) => i === 0 || v > versions[i - 1]!),
    versions.join(", "),
  );
  assert.deepEqual(
    postgres.map((m) => [m.version, m.name]),
    sqlite.map((m) => [m.version, m.name]),
  );
  for (const m of [...sqlite, ...postgres]) {
    assert.doesNotMatch(m.sql, /\{[a-z_]+\}/, m.name);
    assert.doesNotMatch(m.sql, /^\s*--(sqlite|postgres): /m, m.name);
  }
  const all = (ms: { sql: string }[]) => ms.map((m) => m.sql).join("\n");
  assert.doesNotMatch(all(sqlite), /COLLATE "C"|bigserial|boolean|bytea/);
  assert.doesNotMatch(all(postgres), /AUTOINCREMENT|WITHOUT ROWID|\bBLOB\b/);
});

test("the SQLite rendering builds the schema: typed columns, rowid-less tables, partial indexes", () => {
  const db = new Database(":memory:");
  for (const m of readMigrations("sqlite")) db.exec(m.sql);
  const steps = db.prepare("SELECT sql FROM sqlite_master WHERE name = 'steps'").get() as { sql: string };
  assert.match(steps.sql, /WITHOUT ROWID$/);
  const handedOff = (
    db.prepare("PRAGMA table_xinfo(steps)").all() as { name: string; type: string; dflt_value: string }[]
  ).find((c) => c.name === "handed_off");
  assert.deepEqual([handedOff?.type, handedOff?.dflt_value], ["INTEGER", "0"]);
  const indexes = db
    .prepare(
      "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'work_items' AND name LIKE 'work_%' ORDER BY name",
    )
    .all();
  assert.deepEqual(
    indexes.map((r) => (r as { name: string }).name),
    ["work_dead", "work_dedupe", "work_due", "work_lane", "work_leased_key", "work_leases", "work_parked"],
  );
  db.close();
});

/** 014 on a database at 013: the one previous secret of each endpoint moves into the list. */
const PREVIOUS_SECRET_ROWS = [
  "INSERT INTO tenants (id, name, created_at) VALUES ('tn_1', 't', 1)",
  `INSERT INTO webhook_endpoints (id, tenant_id, url, secret, status, created_at, updated_at, previous_secret, previous_secret_expires_at)
   VALUES ('we_1', 'tn_1', 'https://example.com/h', 'enc:v1:new', 'enabled', 1, 1, 'enc:v1:old', 1700000000000),
          ('we_2', 'tn_1', 'https://example.com/h', 'plain', 'enabled', 1, 1, NULL, NULL)`,
];
const movedPreviousSecrets = (rows: { id: string; previous_secrets: string }[]) => {
  assert.deepEqual(
    rows.map((r) => [r.id, JSON.parse(r.previous_secrets)]),
    [
      ["we_1", [{ secret: "enc:v1:old", expires_at: 1700000000000 }]],
      ["we_2", []],
    ],
  );
};

test("014 moves an endpoint's previous secret into previous_secrets (SQLite)", () => {
  const db = new Database(":memory:");
  const ms = readMigrations("sqlite");
  for (const m of ms.filter((m) => m.version < 14)) db.exec(m.sql);
  for (const sql of PREVIOUS_SECRET_ROWS) db.exec(sql);
  db.exec(ms.find((m) => m.version === 14)!.sql);
  movedPreviousSecrets(
    db.prepare("SELECT id, previous_secrets FROM webhook_endpoints ORDER BY id").all() as never,
  );
  const columns = (db.prepare("PRAGMA table_info(webhook_endpoints)").all() as { name: string }[]).map(
    (c) => c.name,
  );
  assert.ok(!columns.includes("previous_secret") && !columns.includes("previous_secret_expires_at"));
  db.close();
});

const pgDown = await pgUnreachable();
if (pgAvailableOrReport(pgDown, "014 on PostgreSQL")) {
  test("014 moves an endpoint's previous secret into previous_secrets (PostgreSQL)", async () => {
    const schema = freshSchemaName("lh_mig");
    const client = new Client({ connectionString: pgBaseUrl });
    await client.connect();
    try {
      await client.query(`CREATE SCHEMA "${schema}"; SET search_path TO "${schema}"`);
      const ms = readMigrations("postgres");
      for (const m of ms.filter((m) => m.version < 14)) await client.query(m.sql);
      for (const sql of PREVIOUS_SECRET_ROWS) await client.query(sql);
      await client.query(ms.find((m) => m.version === 14)!.sql);
      const r = await client.query("SELECT id, previous_secrets FROM webhook_endpoints ORDER BY id");
      movedPreviousSecrets(r.rows);
    } finally {
      await client.end();
      await dropSchemas([schema]);
    }
  });
}
