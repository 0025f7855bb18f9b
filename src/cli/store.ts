import { existsSync } from "node:fs";
import { LonghaulError } from "../core/errors.ts";
import { refuseNewer } from "../store/migrations.ts";
import { openStore, sqlitePathOf } from "../store/open-store.ts";
import type { Store } from "../store/store.ts";

/** The store an operator's command works on when neither `--database-url` nor the variable names one. */
export const DEFAULT_DATABASE_URL = "sqlite:.longhaul/longhaul.db";

/** `--database-url`, else `LONGHAUL_DATABASE_URL` when set and not empty, else the default. */
export function databaseUrl(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return flag || env.LONGHAUL_DATABASE_URL || DEFAULT_DATABASE_URL;
}

/** A URL as it may be printed: without its password. */
export function shownUrl(url: string): string {
  return url.replace(/^(postgres(?:ql)?:\/\/[^:/@]+):[^@]*@/, "$1:***@");
}

/**
 * Opens an existing store without creating or changing anything, for the commands that only
 * read: a SQLite path where no file is is CONFIG_INVALID (a mistyped path must not become an
 * empty database). With `migrated`, a schema behind this code's is STORE_UNAVAILABLE saying to
 * run `longhaul migrate`, and a newer one SCHEMA_TOO_NEW.
 */
export async function openExistingStore(url: string, opts: { migrated: boolean }): Promise<Store> {
  const file = sqlitePathOf(url);
  if (file !== null && file !== ":memory:" && !existsSync(file)) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      `No database at ${file}. Check the path (--database-url, LONGHAUL_DATABASE_URL), or create it with \`longhaul migrate\`.`,
    );
  }
  const store = await openStore(url);
  if (!opts.migrated) return store;
  try {
    const status = await store.migrationStatus();
    refuseNewer(status.applied.at(-1)?.version ?? 0, status.latest);
    if (status.pending.length > 0) {
      const what =
        status.applied.length === 0
          ? "has no longhaul schema yet"
          : `is ${status.pending.length} ${status.pending.length === 1 ? "migration" : "migrations"} behind this longhaul`;
      throw new LonghaulError(
        "STORE_UNAVAILABLE",
        `The database at ${file ?? shownUrl(url)} ${what}; run \`longhaul migrate\` first.`,
      );
    }
    return store;
  } catch (err) {
    await store.close();
    throw err;
  }
}

/** Opens the store and applies its pending migrations, for the commands that write. */
export async function openMigratedStore(url: string): Promise<Store> {
  const store = await openStore(url);
  try {
    await store.migrate();
    return store;
  } catch (err) {
    await store.close();
    throw err;
  }
}
