import { createRequire } from "node:module";
import { LonghaulError } from "../core/errors.ts";

const require = createRequire(import.meta.url);

/**
 * A database driver that is an optional dependency of longhaul (better-sqlite3, pg), loaded on
 * first use: an app that installs longhaul only for its client (`--omit=optional`), or whose
 * native build failed, has none, imports `longhaul/server` all the same, and learns when it
 * opens such a database, in words, what to install.
 */
export function optionalDriver<T>(name: string, database: string, why: string): () => T {
  let loaded: T | undefined;
  return () => {
    if (loaded) return loaded;
    try {
      loaded = require(name) as T;
      return loaded;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "MODULE_NOT_FOUND") throw err;
      throw new LonghaulError(
        "CONFIG_INVALID",
        `${database} needs ${name}, an optional dependency of longhaul that is not installed (${why}). Run \`npm install ${name}\`${database === "SQLite" ? ", or use a postgres:// database URL" : ""}.`,
        { cause: err },
      );
    }
  };
}
