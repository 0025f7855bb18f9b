import { readdirSync, readFileSync } from "node:fs";
import type Database from "better-sqlite3";
import { LonghaulError } from "../../core/errors.ts";

const dir = new URL("./migrations/", import.meta.url);

interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function knownMigrations(): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{3}_.+\.sql$/.test(f))
    .sort()
    .map((f) => ({ version: Number(f.slice(0, 3)), name: f, sql: readFileSync(new URL(f, dir), "utf8") }));
}

/**
 * Applies numbered migrations, each in its own transaction together with its version
 * record. Refuses to run against a schema newer than this code knows, since an older
 * binary would misread it.
 */
export function migrate(db: Database.Database, now: number): { from: number; to: number } {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
  const current =
    (db.prepare("SELECT MAX(version) AS v FROM schema_migrations").get() as { v: number | null }).v ?? 0;
  const all = knownMigrations();
  const latest = all.at(-1)?.version ?? 0;
  if (current > latest) {
    throw new LonghaulError(
      "SCHEMA_TOO_NEW",
      `The database is at schema version ${current} but this longhaul knows only up to ${latest}. Upgrade longhaul before starting it against this database.`,
    );
  }
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
