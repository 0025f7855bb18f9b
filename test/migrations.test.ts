import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import Database from "better-sqlite3";
import { readMigrations, renderMigration } from "../src/store/migrations.ts";
import { tempDir } from "./helpers.ts";

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
  assert.deepEqual(
    sqlite.map((m) => m.version),
    sqlite.map((_, i) => i + 1),
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
