import { createRequire } from "node:module";
import type BetterSqlite3 from "better-sqlite3";
import { LonghaulError } from "../../core/errors.ts";

const require = createRequire(import.meta.url);
let loaded: typeof BetterSqlite3 | undefined;

/**
 * better-sqlite3, loaded when a SQLite file is first opened. It is an optional dependency (a
 * native module): an app that installs longhaul only for its client (`--omit=optional`), or one
 * whose native build failed, has none, and learns it here in words rather than from a module
 * resolution error at import.
 */
export function betterSqlite3(): typeof BetterSqlite3 {
  if (loaded) return loaded;
  try {
    loaded = require("better-sqlite3") as typeof BetterSqlite3;
    return loaded;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "MODULE_NOT_FOUND") throw err;
    throw new LonghaulError(
      "CONFIG_INVALID",
      "SQLite needs better-sqlite3, an optional dependency of longhaul that is not installed (left out by --omit=optional, or its native build failed). Run `npm install better-sqlite3`, or use a postgres:// database URL.",
      { cause: err },
    );
  }
}
