import type { ClientConfig, CustomTypesConfig, Pool } from "pg";
import { LonghaulError, STORAGE_FULL_RETRY_AFTER_S, storageFull } from "../../core/errors.ts";
import { pg } from "./driver.ts";

/** Where a PostgreSQL store lives: the server, and the schema that holds its tables. */
export interface PostgresTarget {
  /** Client settings for `pg`, with `search_path` pinned to `schema`. */
  client: ClientConfig;
  schema: string;
  /** NOTIFY channels, scoped to the schema so two deployments in one database do not wake each other. */
  channels: { work: string; events: string };
}

// Lower-case identifiers only, so the schema and channel names never need quoting rules beyond
// double quotes, and a channel name (base + "_" + schema) stays within PostgreSQL's 63 bytes.
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,47}$/;

/**
 * Reads a `postgres://` URL. `?schema=` names the schema (default `public`) and is removed
 * before the URL reaches `pg`; every other parameter (`application_name`, `sslmode`, …) is
 * passed through. CONFIG_INVALID for a schema name that is not a plain lower-case identifier.
 */
export function parseTarget(url: string, applicationName?: string): PostgresTarget {
  let u: URL;
  try {
    u = new URL(url);
  } catch (cause) {
    throw new LonghaulError("CONFIG_INVALID", `"${redact(url)}" is not a valid postgres:// URL.`, { cause });
  }
  const schema = u.searchParams.get("schema") ?? "public";
  if (!SCHEMA_NAME.test(schema)) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      `The schema "${schema}" in the database URL must be a lower-case identifier (letters, digits, _; at most 48).`,
    );
  }
  u.searchParams.delete("schema");
  // Through the startup packet, so every pooled connection resolves unqualified names in the schema.
  const options = [u.searchParams.get("options"), `-c search_path=${schema}`].filter(Boolean).join(" ");
  u.searchParams.set("options", options);
  const suffix = schema === "public" ? "" : `_${schema}`;
  return {
    schema,
    channels: { work: `longhaul_work${suffix}`, events: `longhaul_events${suffix}` },
    client: {
      connectionString: u.toString(),
      // The URL's own application_name wins over this default.
      application_name: applicationName ?? "longhaul",
      connectionTimeoutMillis: 5000,
      keepAlive: true,
      // A process that stalls inside a transaction (a frozen event loop) must not hold its row
      // locks over the whole cluster: the server ends such a session, and its work rolls back.
      idle_in_transaction_session_timeout: 60_000,
      types: { getTypeParser: typeParser as CustomTypesConfig["getTypeParser"] },
    },
  };
}

const INT8 = 20;
/** `bigint` columns hold millisecond times and sequence numbers, all well within 2^53. */
function typeParser(oid: number, format?: string): unknown {
  if (oid === INT8 && format !== "binary") return (v: string) => Number(v);
  return pg().types.getTypeParser(oid, format as "text");
}

/**
 * A pool for the store's transactions. An idle connection the server drops (restart,
 * `pg_terminate_backend`) is reported on `error` and removed by the pool; without a listener
 * that event would crash the process.
 */
export function createPool(target: PostgresTarget, max: number): Pool {
  const pool = new (pg().Pool)({ ...target.client, max, idleTimeoutMillis: 30_000 });
  pool.on("error", () => {
    // The pool has already discarded the connection; the next checkout opens a fresh one.
  });
  return pool;
}

const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "57P01", // admin_shutdown (pg_terminate_backend, a fast shutdown)
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now (starting up, shutting down)
  "53300", // too_many_connections
]);

/** Whether `err` means the server could not be reached or dropped the connection. */
export function isConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" && (CONNECTION_CODES.has(code) || code.startsWith("08"))) return true;
  return /^Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/.test(
    err.message,
  );
}

/** The error a caller sees when the database is down: 503, with the driver's error as cause. */
export function unavailable(cause: unknown): LonghaulError {
  const why = cause instanceof Error ? cause.message : String(cause);
  return new LonghaulError(
    "STORE_UNAVAILABLE",
    `PostgreSQL is unreachable (${why}). The operation may not have been applied; retry it once the database is back.`,
    { cause, details: { retry_after_s: STORAGE_FULL_RETRY_AFTER_S } },
  );
}

/**
 * Class 53 (insufficient resources) as the error a caller sees: the statement failed and its
 * transaction was rolled back, so the operation can be sent again once the server has room.
 * 53100 disk_full is STORAGE_FULL; out of memory (53200), too many connections (53300) and
 * the class itself (53000) are STORE_UNAVAILABLE; both are 503 with Retry-After. Null for
 * any other error.
 */
export function resourceError(err: unknown): LonghaulError | null {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === "53100") return storageFull("PostgreSQL", err);
  if (code === "53000" || code === "53200" || code === "53300") {
    const why = err instanceof Error ? err.message : String(err);
    return new LonghaulError(
      "STORE_UNAVAILABLE",
      `PostgreSQL is out of resources (${why}); nothing was saved. Retry in a few seconds.`,
      { cause: err, details: { retry_after_s: STORAGE_FULL_RETRY_AFTER_S } },
    );
  }
  return null;
}

/** The URL without its password, for messages. */
export function redact(url: string): string {
  return url.replace(/\/\/([^:/@]*):[^@/]*@/, "//$1:***@");
}
