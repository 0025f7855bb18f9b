import { readdirSync, readFileSync } from "node:fs";
import { LonghaulError } from "../core/errors.ts";

/**
 * The schema, written once (ARCHITECTURE §4.1): `migrations/NNN_name.sql`, numbered, each
 * rendered for the dialect that applies it. The files are SQL with a few tokens for what the
 * two dialects spell differently:
 *
 * | token             | SQLite                              | PostgreSQL             |
 * | ----------------- | ----------------------------------- | ---------------------- |
 * | `{id}`            | `TEXT`                              | `text COLLATE "C"`     |
 * | `{bigint}`        | `INTEGER`                           | `bigint`               |
 * | `{int}`           | `INTEGER`                           | `integer`              |
 * | `{bool}`          | `INTEGER`                           | `boolean`              |
 * | `{true}`/`{false}`| `1` / `0`                           | `true` / `false`       |
 * | `{bytes}`         | `BLOB`                              | `bytea`                |
 * | `{serial}`        | `INTEGER PRIMARY KEY AUTOINCREMENT` | `bigserial PRIMARY KEY`|
 * | `{without_rowid}` | `WITHOUT ROWID`                     | (nothing)              |
 *
 * `{id}` is for ids and keys that are ordered or compared: PostgreSQL's "C" collation is byte
 * order, as in SQLite. `{bigint}` holds times (milliseconds since the epoch), sequence numbers
 * and token counts. Other text, JSON included (stored exactly as written), is plain `text`.
 * A line that starts with `--sqlite: ` or `--postgres: ` (after any indentation) belongs to
 * that dialect alone: the prefix is removed for it and the line dropped for the other.
 * An unknown `{token}` or `--dialect: ` prefix throws when the migrations are read.
 */
export type SchemaDialect = "sqlite" | "postgres";

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** The migrations a database has had, and those of this code it has not had yet. */
export interface MigrationStatus {
  applied: { version: number; name: string; appliedAt: number }[];
  pending: { version: number; name: string }[];
  /** The newest version this code knows; an applied version above it is a newer schema (SCHEMA_TOO_NEW). */
  latest: number;
}

/** `applied` (as the version table holds it) against the migrations this code knows. */
export function migrationStatusOf(
  known: readonly Migration[],
  applied: MigrationStatus["applied"],
): MigrationStatus {
  const current = applied.reduce((v, m) => Math.max(v, m.version), 0);
  return {
    applied,
    pending: known.filter((m) => m.version > current).map(({ version, name }) => ({ version, name })),
    latest: known.at(-1)?.version ?? 0,
  };
}

const TOKENS = new Map<string, Record<SchemaDialect, string>>([
  ["id", { sqlite: "TEXT", postgres: 'text COLLATE "C"' }],
  ["bigint", { sqlite: "INTEGER", postgres: "bigint" }],
  ["int", { sqlite: "INTEGER", postgres: "integer" }],
  ["bool", { sqlite: "INTEGER", postgres: "boolean" }],
  ["true", { sqlite: "1", postgres: "true" }],
  ["false", { sqlite: "0", postgres: "false" }],
  ["bytes", { sqlite: "BLOB", postgres: "bytea" }],
  ["serial", { sqlite: "INTEGER PRIMARY KEY AUTOINCREMENT", postgres: "bigserial PRIMARY KEY" }],
  ["without_rowid", { sqlite: "WITHOUT ROWID", postgres: "" }],
]);

const DIALECTS: readonly string[] = ["sqlite", "postgres"] satisfies SchemaDialect[];

const DIR = new URL("./migrations/", import.meta.url);

/** The numbered migrations (`NNN_name.sql`), in order, rendered for `dialect`. */
export function readMigrations(dialect: SchemaDialect, dir: URL = DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{3}_.+\.sql$/.test(f))
    .sort()
    .map((f) => ({
      version: Number(f.slice(0, 3)),
      name: f,
      sql: renderMigration(readFileSync(new URL(f, dir), "utf8"), dialect, f),
    }));
}

/** One migration's text for `dialect`; throws on an unknown token or dialect prefix (`name` says where). */
export function renderMigration(text: string, dialect: SchemaDialect, name: string): string {
  const lines: string[] = [];
  for (const line of text.split("\n")) {
    const marked = /^(\s*)--([a-z_]+): (.*)$/.exec(line);
    if (marked) {
      const [, indent, only, rest] = marked;
      if (!DIALECTS.includes(only as string)) throw new Error(`${name}: unknown dialect prefix --${only}:`);
      if (only === dialect) lines.push(`${indent}${rest}`);
      continue;
    }
    lines.push(line);
  }
  return lines.join("\n").replace(/\{([a-z_]+)\}/g, (_, token: string) => {
    const spelled = TOKENS.get(token);
    if (!spelled) throw new Error(`${name}: unknown token {${token}}`);
    return spelled[dialect];
  });
}

/**
 * Returns `current`, or throws SCHEMA_TOO_NEW when the database is at a version newer than
 * `latest`, the newest this code knows: older code would misread that schema.
 */
export function refuseNewer(current: number, latest: number): number {
  if (current > latest) {
    throw new LonghaulError(
      "SCHEMA_TOO_NEW",
      `The database is at schema version ${current} but this longhaul knows only up to ${latest}. Upgrade longhaul before starting it against this database.`,
    );
  }
  return current;
}
