import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { Client } from "pg";
import { sleep } from "./helpers.ts";

/** The PostgreSQL the tests use, and a fresh schema per use. */
export const pgBaseUrl = process.env.LONGHAUL_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** Null when PostgreSQL answers, else why not. */
export async function pgUnreachable(url = pgBaseUrl): Promise<string | null> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query("SELECT 1");
    return null;
  } catch (err) {
    return (err as Error).message;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Registers the stand-in test for an unreachable PostgreSQL: a failure under CI=true, a loud
 * skip elsewhere. Returns true when the real tests should be registered.
 */
export function pgAvailableOrReport(unreachable: string | null, what: string): boolean {
  if (unreachable === null) return true;
  const why = `PostgreSQL is unreachable (${unreachable})`;
  if (process.env.CI === "true") {
    test(`${what}: PostgreSQL is reachable (required when CI=true)`, () => {
      assert.fail(`${why}. Start it, or set LONGHAUL_TEST_POSTGRES_URL.`);
    });
  } else {
    console.warn(`\n!!! ${what} were SKIPPED: ${why}.\n!!! They fail instead when CI=true.\n`);
    test(what, { skip: why }, () => {});
  }
  return false;
}

export function pgUrl(schema: string, applicationName?: string): string {
  const u = new URL(pgBaseUrl);
  u.searchParams.set("schema", schema);
  if (applicationName) u.searchParams.set("application_name", applicationName);
  return u.toString();
}

export const freshSchemaName = (prefix = "lh_test") => `${prefix}_${randomBytes(6).toString("hex")}`;

export async function dropSchemas(names: string[]): Promise<void> {
  const admin = new Client({ connectionString: pgBaseUrl });
  await admin.connect();
  for (const s of names) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  await admin.end();
}

/**
 * A lock across test processes for tests that restart the database server: while one holds
 * it, no other PostgreSQL test runs. A directory is created atomically or not at all; a lock
 * whose holder has died is taken over. Returns the release.
 */
export async function acquirePgServerLock(): Promise<() => void> {
  const dir = join(tmpdir(), "longhaul-pg-server.lock");
  const until = Date.now() + 10 * 60_000;
  for (;;) {
    try {
      mkdirSync(dir);
      writeFileSync(join(dir, "pid"), String(process.pid));
      return () => rmSync(dir, { recursive: true, force: true });
    } catch {
      if (holderIsGone(dir)) rmSync(dir, { recursive: true, force: true });
      else if (Date.now() > until) throw new Error(`could not take ${dir}; remove it if no test is running`);
      await sleep(100);
    }
  }
}

/**
 * The PostgreSQL tests of one file: they run holding the server lock (another file restarts
 * the server), and every schema `fresh()` names is dropped once they are done. Call it where
 * the file's hooks belong: at its top level, or inside the block that runs its PostgreSQL tests.
 */
export function pgTestSchemas(): { fresh: () => string } {
  const names: string[] = [];
  let release: () => void = () => {};
  before(async () => {
    release = await acquirePgServerLock();
  });
  after(async () => {
    try {
      await dropSchemas(names);
    } finally {
      release();
    }
  });
  return {
    fresh: () => {
      const name = freshSchemaName();
      names.push(name);
      return name;
    },
  };
}

export async function withPgServerLock<T>(fn: () => Promise<T>): Promise<T> {
  const release = await acquirePgServerLock();
  try {
    return await fn();
  } finally {
    release();
  }
}

/** A lock left by a test process that has died. */
function holderIsGone(dir: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(join(dir, "pid"), "utf8"));
  } catch {
    return false; // being created right now
  }
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
}
