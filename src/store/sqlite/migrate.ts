import type Database from "better-sqlite3";
import {
  type Migration,
  type MigrationStatus,
  migrationStatusOf,
  readMigrations,
  refuseNewer,
} from "../migrations.ts";

/** The numbered migrations, in order, rendered for SQLite (one set for both dialects, `../migrations.ts`). */
export const knownMigrations = (): Migration[] => readMigrations("sqlite");

/**
 * Applies numbered migrations, each in its own transaction together with its version
 * record. Refuses to run against a schema newer than this code knows, since an older
 * binary would misread it.
 */
export function migrate(db: Database.Database, now: number): { from: number; to: number } {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
  const all = knownMigrations();
  const latest = all.at(-1)?.version ?? 0;
  const row = db.prepare("SELECT MAX(version) AS v FROM schema_migrations").get() as { v: number | null };
  const current = refuseNewer(row.v ?? 0, latest);
  for (const m of all) {
    if (m.version <= current) continue;
    db.transaction(() => {
      db.exec(m.sql);
      db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(
        m.version,
        m.name,
        now,
      );
    }).immediate();
  }
  return { from: current, to: Math.max(current, latest) };
}

/** What `migrate` would do, read without writing: no table is created when none exists. */
export function migrationStatus(db: Database.Database): MigrationStatus {
  const table = db
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
    .get();
  const applied = table
    ? (db
        .prepare("SELECT version, name, applied_at AS appliedAt FROM schema_migrations ORDER BY version")
        .all() as MigrationStatus["applied"])
    : [];
  return migrationStatusOf(knownMigrations(), applied);
}
