import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import Database from "better-sqlite3";
import { Client } from "pg";
import { loadConfig } from "../src/cli/config.ts";
import type { LonghaulError } from "../src/core/errors.ts";
import { openStore } from "../src/store/open-store.ts";
import { tempDir } from "./helpers.ts";
import {
  dropSchemas,
  freshSchemaName,
  pgAvailableOrReport,
  pgBaseUrl,
  pgUnreachable,
  pgUrl,
} from "./pg-env.ts";
import { CLI_FROM_SOURCE } from "./processes.ts";

// The command line's contract for scripts and people: a usage error is one line and the
// command's usage on stderr, exit 2, never a stack trace; the commands that only read never
// create or migrate a database; listings have --json; `tasks show` prints the API's JSON.

const tmp = tempDir("longhaul-cli-usage-");
after(() => tmp.cleanup());

/** Runs the CLI from source; resolves with its exit code and output, whatever the code. */
function cli(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [...CLI_FROM_SOURCE, ...args],
      { env: { ...process.env, LONGHAUL_DATABASE_URL: "", ...env } },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const STACK_FRAME = /^\s+at /m;

const usageErrors: [args: string[], first: RegExp][] = [
  [["serve", "--port"], /^longhaul serve: option '--port <port>' argument missing$/],
  [["dev", "--sim-port"], /^longhaul dev: option '--sim-port <port>' argument missing$/],
  [["serve", "--prot", "9000"], /^longhaul serve: unknown option '--prot' \(did you mean --port\?\)$/],
  [["serve", "--port", "http"], /^longhaul serve: option '--port <port>' argument 'http' is invalid\./],
  [["serve", "--role", "boss"], /^longhaul serve: option '--role <role>' argument 'boss' is invalid\./],
  [["tasks", "lst"], /^longhaul tasks: unknown command 'lst' \(did you mean list\?\)$/],
  [["tenants", "frob"], /^longhaul tenants: unknown command 'frob'$/],
  [["migrate", "stauts"], /^longhaul migrate: unknown command 'stauts' \(did you mean status\?\)$/],
  [["tasks", "list", "--limit", "0"], /^longhaul tasks list: option '--limit <n>' argument '0' is invalid\./],
  [["tasks", "show"], /^longhaul tasks show: missing required argument 'TASK_ID'$/],
  [["frobnicate"], /^longhaul: unknown command 'frobnicate'$/],
  [["tasks"], /^Usage: longhaul tasks/],
];

for (const [args, first] of usageErrors) {
  test(`\`longhaul ${args.join(" ")}\` is a usage error: one line, the usage, exit 2, no stack trace`, async () => {
    const r = await cli(args, { LONGHAUL_DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr.split("\n")[0]!, first);
    assert.match(r.stderr, /^Usage: longhaul /m);
    assert.doesNotMatch(r.stderr, STACK_FRAME);
    assert.equal(r.stdout, "");
  });
}

test("a bad value of an option's variable is a usage error naming the variable", async () => {
  const r = await cli(["serve"], { LONGHAUL_PORT: "eighty" });
  assert.equal(r.code, 2);
  assert.match(
    r.stderr,
    /^longhaul serve: option '--port <port>' value 'eighty' from env 'LONGHAUL_PORT' is invalid/,
  );
  assert.doesNotMatch(r.stderr, STACK_FRAME);
});

const READ_ONLY = [
  ["tasks", "list"],
  ["tasks", "show", "t_missing"],
  ["tenants", "list"],
  ["migrate", "status"],
  ["migrate", "--dry-run"],
];

test("the read-only commands on a mistyped SQLite path fail with exit 1 and create no file", async () => {
  const path = join(tmp.dir, "typo", "longhaul.db");
  for (const args of READ_ONLY) {
    const r = await cli([...args, "--database-url", `sqlite:${path}`]);
    assert.equal(r.code, 1, `${args.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`: No database at ${path.replaceAll(".", "\\.")}\\. `));
    assert.doesNotMatch(r.stderr, STACK_FRAME);
    assert.equal(existsSync(path), false, `${args.join(" ")} created the file`);
    assert.equal(existsSync(join(tmp.dir, "typo")), false, `${args.join(" ")} created the folder`);
  }
  // The variable names the database as the flag does.
  const r = await cli(["tasks", "list"], { LONGHAUL_DATABASE_URL: `sqlite:${path}` });
  assert.equal(r.code, 1);
  assert.equal(existsSync(path), false);
});

/** A SQLite file with a table of its own and no longhaul schema. */
function foreignDatabase(name: string): string {
  const path = join(tmp.dir, name);
  const db = new Database(path);
  db.exec("CREATE TABLE notes (body TEXT)");
  db.close();
  return path;
}
const tablesOf = (path: string) => {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare("SELECT name FROM sqlite_master ORDER BY name").all();
  } finally {
    db.close();
  }
};

test("on a database without the schema, the read-only commands say to run `longhaul migrate` and change nothing", async () => {
  const path = foreignDatabase("unmigrated.db");
  const before = tablesOf(path);
  for (const args of [
    ["tasks", "list"],
    ["tasks", "show", "t_x"],
    ["tenants", "list"],
  ]) {
    const r = await cli([...args, "--database-url", `sqlite:${path}`]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stderr,
      /has no longhaul schema yet; run `longhaul migrate` first\. \(STORE_UNAVAILABLE\)/,
    );
  }
  const status = await cli(["migrate", "status", "--json", "--database-url", `sqlite:${path}`]);
  assert.equal(status.code, 0, status.stderr);
  const parsed = JSON.parse(status.stdout);
  assert.deepEqual(parsed.applied, []);
  assert.equal(parsed.pending[0].name, "001_init.sql");
  assert.deepEqual(tablesOf(path), before, "no table was created");
});

test("migrate --dry-run lists what is pending and changes nothing; migrate status shows applied and pending", async () => {
  const path = join(tmp.dir, "partial.db");
  const url = `sqlite:${path}`;
  assert.equal((await cli(["migrate", "--database-url", url])).code, 0);
  // The newest migration not yet applied, as after an upgrade of longhaul.
  const db = new Database(path);
  const newest = db
    .prepare("SELECT version, name FROM schema_migrations ORDER BY version DESC LIMIT 1")
    .get() as {
    version: number;
    name: string;
  };
  db.prepare("DELETE FROM schema_migrations WHERE version = ?").run(newest.version);
  const rows = () =>
    db.prepare("SELECT version, name, applied_at FROM schema_migrations ORDER BY version").all();
  const before = rows();

  const dry = await cli(["migrate", "--dry-run", "--database-url", url]);
  assert.equal(dry.code, 0, dry.stderr);
  assert.match(dry.stdout, new RegExp(`Would apply 1 migration:\\n  ${newest.name}`));
  const dryJson = await cli(["migrate", "--dry-run", "--json", "--database-url", url]);
  assert.deepEqual(JSON.parse(dryJson.stdout), { pending: [newest] });
  assert.deepEqual(rows(), before, "the migration table is unchanged");

  const status = await cli(["migrate", "status", "--json", "--database-url", url]);
  const parsed = JSON.parse(status.stdout);
  assert.equal(parsed.applied.length, before.length);
  assert.equal(parsed.applied[0].name, "001_init.sql");
  assert.match(parsed.applied[0].applied_at, /^\d{4}-\d\d-\d\dT/);
  assert.deepEqual(parsed.pending, [newest]);
  const text = await cli(["migrate", "status", "--database-url", url]);
  assert.match(text.stdout, new RegExp(`^pending  ${newest.name}$`, "m"));
  assert.match(text.stdout, /1 migration pending: run `longhaul migrate`\./);
  // A command that reads refuses a schema behind the code's.
  const list = await cli(["tasks", "list", "--database-url", url]);
  assert.equal(list.code, 1);
  assert.match(list.stderr, /is 1 migration behind this longhaul; run `longhaul migrate` first/);
  assert.deepEqual(rows(), before, "the migration table is still unchanged");
  db.close();
});

const pgDown = await pgUnreachable();
if (pgAvailableOrReport(pgDown, "the read-only commands on PostgreSQL")) {
  test("on PostgreSQL, migrate status and --dry-run create no schema; migrate applies what they listed", async () => {
    const schema = freshSchemaName("lh_cli");
    const url = pgUrl(schema);
    const schemaExists = async () => {
      const c = new Client({ connectionString: pgBaseUrl });
      await c.connect();
      try {
        return (await c.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema])).rowCount === 1;
      } finally {
        await c.end();
      }
    };
    try {
      const dry = await cli(["migrate", "--dry-run", "--json", "--database-url", url]);
      assert.equal(dry.code, 0, dry.stderr);
      const pending = JSON.parse(dry.stdout).pending;
      assert.equal(pending[0].name, "001_init.sql");
      const list = await cli(["tasks", "list", "--database-url", url]);
      assert.equal(list.code, 1);
      assert.match(list.stderr, /has no longhaul schema yet; run `longhaul migrate` first/);
      assert.equal(await schemaExists(), false, "no schema was created");

      assert.equal((await cli(["migrate", "--database-url", url])).code, 0);
      const status = JSON.parse((await cli(["migrate", "status", "--json", "--database-url", url])).stdout);
      assert.deepEqual(
        status.applied.map((m: { name: string }) => m.name),
        pending.map((m: { name: string }) => m.name),
      );
      assert.deepEqual(status.pending, []);
      const tasks = await cli(["tasks", "list", "--json", "--database-url", url]);
      assert.deepEqual(JSON.parse(tasks.stdout), { data: [], next_cursor: null });
    } finally {
      await dropSchemas([schema]);
    }
  });
}

test("tasks show prints the API's snake_case JSON; the listings' --json parses", async () => {
  const path = join(tmp.dir, "tasks.db");
  const url = `sqlite:${path}`;
  const store = await openStore(url);
  await store.migrate();
  await store.ensureTenant({ id: "tn_dev", name: "development", keyHash: "h" });
  const { task } = await store.submitTask({
    tenantId: "tn_dev",
    type: "app.hello",
    input: { name: "ana" },
    clientRequestId: "req-1",
    userId: null,
    traceId: null,
  });
  await store.close();

  const show = await cli(["tasks", "show", task.id, "--database-url", url]);
  assert.equal(show.code, 0, show.stderr);
  const detail = JSON.parse(show.stdout);
  assert.equal(detail.task_id, task.id);
  assert.equal(detail.type, "app.hello");
  assert.equal(detail.status, "pending");
  assert.equal(detail.client_request_id, "req-1");
  assert.match(detail.created_at, /^\d{4}-\d\d-\d\dT.*Z$/);
  assert.deepEqual(detail.steps, []);
  assert.deepEqual(detail.jobs, []);
  for (const key of ["id", "createdAt", "tenantId", "clientRequestId"])
    assert.equal(key in detail, false, key);

  const missing = await cli(["tasks", "show", "t_nope", "--database-url", url]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /^longhaul tasks show: No task t_nope for this tenant\. \(TASK_NOT_FOUND\)$/m);

  const list = JSON.parse((await cli(["tasks", "list", "--json", "--database-url", url])).stdout);
  assert.deepEqual(
    list.data.map((t: { task_id: string }) => t.task_id),
    [task.id],
  );
  assert.equal(list.next_cursor, null);
  const tenants = JSON.parse((await cli(["tenants", "list", "--json", "--database-url", url])).stdout);
  assert.deepEqual(
    tenants.data.map((t: { tenant_id: string; name: string }) => [t.tenant_id, t.name]),
    [["tn_dev", "development"]],
  );
  // The text forms stay as they were.
  const text = await cli(["tasks", "list", "--database-url", url]);
  assert.match(text.stdout, new RegExp(`^${task.id}\\tapp\\.hello\\tpending\\t`));
});

test("a TypeScript config without tsx is CONFIG_INVALID saying what to install", async () => {
  const file = join(tmp.dir, "longhaul.config.ts");
  writeFileSync(file, "export default { public_url: 'https://x.example.com' };\n");
  const missing = Object.assign(
    new Error("Cannot find package 'tsx' imported from /app/node_modules/longhaul"),
    {
      code: "ERR_MODULE_NOT_FOUND",
    },
  );
  await assert.rejects(
    loadConfig(file, { typescript: () => Promise.reject(missing) }),
    (err: LonghaulError) => {
      assert.equal(err.code, "CONFIG_INVALID");
      assert.match(
        err.message,
        /is TypeScript, which longhaul reads through tsx, and tsx could not be loaded/,
      );
      assert.match(err.message, /`npm install -D tsx`/);
      assert.match(err.message, /or write the config as a \.js or \.mjs file\./);
      assert.equal(err.cause, missing);
      return true;
    },
  );
  // A .mjs config needs no loader at all.
  const mjs = join(tmp.dir, "plain.config.mjs");
  writeFileSync(mjs, "export default { public_url: 'https://y.example.com' };\n");
  let asked = false;
  const config = await loadConfig(mjs, {
    typescript: async () => {
      asked = true;
    },
  });
  assert.equal(config.public_url, "https://y.example.com");
  assert.equal(asked, false);
});
