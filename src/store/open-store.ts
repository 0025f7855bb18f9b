import type { Clock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import type { IdGenerator } from "../core/ids.ts";
import { SqliteStore } from "./sqlite/sqlite-store.ts";
import type { Store } from "./store.ts";

/** The file a `sqlite:` URL names (or `:memory:`), its default when it names none; null for another kind of URL. */
export function sqlitePathOf(url: string): string | null {
  if (!url.startsWith("sqlite:")) return null;
  return url.slice("sqlite:".length).replace(/^\/\//, "") || ".longhaul/longhaul.db";
}

/**
 * Opens the store a database URL names: `sqlite:path/to/file.db` (or `sqlite::memory:`), or
 * `postgres://user@host/db` (with `?schema=name` to use a schema other than `public`).
 *
 * SQLite (a file, or `:memory:`) is a SqliteStore in this process (`syncInPlace`: see
 * SqliteStoreOptions). PostgreSQL's driver is loaded only when a PostgreSQL URL is opened.
 */
export async function openStore(
  url: string,
  opts: { clock?: Clock; ids?: IdGenerator; syncInPlace?: boolean } = {},
): Promise<Store> {
  const { syncInPlace, ...common } = opts;
  const file = sqlitePathOf(url);
  if (file !== null) return new SqliteStore({ path: file, ...common, syncInPlace: syncInPlace === true });
  if (url.startsWith("postgres://") || url.startsWith("postgresql://")) {
    const { PostgresStore } = await import("./postgres/postgres-store.ts");
    return new PostgresStore({ url, ...common });
  }
  throw new LonghaulError(
    "CONFIG_INVALID",
    `LONGHAUL_DATABASE_URL must start with sqlite: or postgres://, not "${url}".`,
  );
}
