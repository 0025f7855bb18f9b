import type Database from "better-sqlite3";
import type { Statement } from "better-sqlite3";
import { storageFull } from "../../core/errors.ts";
import { betterSqlite3 } from "./driver.ts";

type Params = readonly unknown[];

/** Prepared statements, cached by their text: each SQL string is compiled once per connection. */
export class Sql {
  private readonly cache = new Map<string, Statement>();
  private readonly rawCache = new Map<string, Statement>();
  constructor(readonly db: Database.Database) {}

  private prepare(text: string): Statement {
    let s = this.cache.get(text);
    if (!s) {
      s = this.db.prepare(text);
      this.cache.set(text, s);
    }
    return s;
  }
  run(text: string, ...params: Params): Database.RunResult {
    return this.prepare(text).run(...params);
  }
  get<T>(text: string, ...params: Params): T | undefined {
    return this.prepare(text).get(...params) as T | undefined;
  }
  all<T>(text: string, ...params: Params): T[] {
    return this.prepare(text).all(...params) as T[];
  }
  /**
   * Rows as arrays of their columns, in the statement's order: for the queue's hottest
   * statements, where building an object per row costs more than the statement itself.
   */
  raw<T extends unknown[]>(text: string, ...params: Params): T[] {
    let s = this.rawCache.get(text);
    if (!s) {
      s = this.db.prepare(text).raw(true);
      this.rawCache.set(text, s);
    }
    return s.all(...params) as T[];
  }
}

/**
 * Opens the file with the durability the design asks for: WAL, `synchronous=FULL` (a
 * committed transaction survives power loss), foreign keys on, and a busy timeout so
 * a second reader (the CLI) waits instead of failing.
 */
export function openDatabase(path: string): Database.Database {
  const db = new (betterSqlite3())(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.pragma("foreign_keys = ON");
  db.pragma("busy_timeout = 5000");
  return db;
}

/**
 * SQLite answers SQLITE_FULL when the file system has no space left (or the file reached
 * `max_page_count`). Nothing of the failed write is kept, so callers see STORAGE_FULL (503,
 * retry later) instead of an internal error.
 */
export function isStorageFull(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === "SQLITE_FULL";
}

/** `err` as the error a caller should see: STORAGE_FULL for a full disk, else unchanged. */
export function storageError(err: unknown): unknown {
  return isStorageFull(err) ? storageFull("SQLite", err) : err;
}
