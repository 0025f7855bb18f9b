import { readdirSync, readFileSync } from "node:fs";
import { LonghaulError } from "../core/errors.ts";

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** The numbered migrations (`NNN_name.sql`) in `dir`, in order. */
export function readMigrations(dir: URL): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{3}_.+\.sql$/.test(f))
    .sort()
    .map((f) => ({ version: Number(f.slice(0, 3)), name: f, sql: readFileSync(new URL(f, dir), "utf8") }));
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
