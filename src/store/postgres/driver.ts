import { createRequire } from "node:module";
import type * as Pg from "pg";
import { LonghaulError } from "../../core/errors.ts";

const require = createRequire(import.meta.url);
let loaded: typeof Pg | undefined;

/**
 * `pg`, loaded when a PostgreSQL database is first opened. It is an optional dependency: an app
 * that installs longhaul only for its client (`--omit=optional`) has none, imports
 * `longhaul/server` all the same, and learns here, in words, what a PostgreSQL URL needs.
 */
export function pg(): typeof Pg {
  if (loaded) return loaded;
  try {
    loaded = require("pg") as typeof Pg;
    return loaded;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "MODULE_NOT_FOUND") throw err;
    throw new LonghaulError(
      "CONFIG_INVALID",
      "PostgreSQL needs pg, an optional dependency of longhaul that is not installed (left out by --omit=optional). Run `npm install pg`.",
      { cause: err },
    );
  }
}
