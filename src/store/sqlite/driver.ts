import type BetterSqlite3 from "better-sqlite3";
import { optionalDriver } from "../optional-driver.ts";

/** better-sqlite3, loaded when a SQLite file is first opened (see `optionalDriver`). */
export const betterSqlite3: () => typeof BetterSqlite3 = optionalDriver<typeof BetterSqlite3>(
  "better-sqlite3",
  "SQLite",
  "left out by --omit=optional, or its native build failed",
);
