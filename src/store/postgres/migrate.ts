import type { Pool, PoolClient } from "pg";
import {
  type Migration,
  type MigrationStatus,
  migrationStatusOf,
  readMigrations,
  refuseNewer,
} from "../migrations.ts";
import { isConnectionError, unavailable } from "./pool.ts";

/** The numbered migrations, in order, rendered for PostgreSQL (one set for both dialects, `../migrations.ts`). */
export const knownMigrations = (): Migration[] => readMigrations("postgres");

/**
 * Applies pending migrations to `schema`, each in its own transaction together with its
 * version record. Every transaction first takes one advisory lock, so processes that start
 * at once apply each migration once: the second waits, then sees the version recorded.
 * Refuses a schema newer than this code knows (SCHEMA_TOO_NEW), since older code would
 * misread it. STORE_UNAVAILABLE when the server cannot be reached.
 */
export async function migrate(
  pool: Pool,
  schema: string,
  now: number,
): Promise<{ from: number; to: number }> {
  const all = knownMigrations();
  const latest = all.at(-1)?.version ?? 0;
  let client: PoolClient;
  try {
    client = await pool.connect();
  } catch (err) {
    throw isConnectionError(err) ? unavailable(err) : err;
  }
  try {
    const locked = async <T>(fn: () => Promise<T>): Promise<T> => {
      await client.query("BEGIN");
      try {
        await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`${schema}:migrate`]);
        const v = await fn();
        await client.query("COMMIT");
        return v;
      } catch (err) {
        await client.query("ROLLBACK").catch(() => {});
        throw err;
      }
    };
    const from = await locked(async () => {
      // Only when missing: CREATE SCHEMA needs a privilege on the database that a role owning
      // just its schema may lack, even with IF NOT EXISTS.
      const exists = await client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
      if (exists.rowCount === 0) await client.query(`CREATE SCHEMA "${schema}"`);
      await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)`);
      return refuseNewer(await currentVersion(client), latest);
    });
    for (const m of all) {
      if (m.version <= from) continue;
      await locked(async () => {
        // Another process may have applied it while this one waited for the lock.
        if (refuseNewer(await currentVersion(client), latest) >= m.version) return;
        await client.query(m.sql);
        await client.query("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)", [
          m.version,
          m.name,
          now,
        ]);
      });
    }
    client.release();
    return { from, to: Math.max(from, latest) };
  } catch (err) {
    client.release(isConnectionError(err) ? (err as Error) : undefined);
    throw isConnectionError(err) ? unavailable(err) : err;
  }
}

async function currentVersion(client: PoolClient): Promise<number> {
  const r = await client.query<{ v: number | null }>("SELECT max(version) AS v FROM schema_migrations");
  return r.rows[0]?.v ?? 0;
}

/**
 * What `migrate` would do to `schema`, read without writing: neither the schema nor the
 * version table is created when missing. STORE_UNAVAILABLE when the server cannot be reached.
 */
export async function migrationStatus(pool: Pool, schema: string): Promise<MigrationStatus> {
  try {
    const table = await pool.query<{ t: string | null }>(
      "SELECT to_regclass(quote_ident($1) || '.schema_migrations')::text AS t",
      [schema],
    );
    const applied =
      table.rows[0]?.t == null
        ? []
        : (
            await pool.query<{ version: number; name: string; applied_at: number }>(
              "SELECT version, name, applied_at FROM schema_migrations ORDER BY version",
            )
          ).rows.map((r) => ({ version: r.version, name: r.name, appliedAt: Number(r.applied_at) }));
    return migrationStatusOf(knownMigrations(), applied);
  } catch (err) {
    throw isConnectionError(err) ? unavailable(err) : err;
  }
}
