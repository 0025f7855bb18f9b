import type * as Pg from "pg";
import { optionalDriver } from "../optional-driver.ts";

/** `pg`, loaded when a PostgreSQL database is first opened (see `optionalDriver`). */
export const pg: () => typeof Pg = optionalDriver<typeof Pg>(
  "pg",
  "PostgreSQL",
  "left out by --omit=optional",
);
