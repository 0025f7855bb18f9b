import type Database from "better-sqlite3";

/** An uploaded file as the simulator keeps it (its Files API). */
export interface SimFile {
  id: string;
  purpose: string;
  filename: string;
  bytes: Buffer;
  createdAt: number;
}

/** A batch: its object in OpenAI's shape, and when it is due to end. */
export interface SimBatch {
  id: string;
  idempotencyKey: string;
  /** The Batch object `GET /v1/batches/:id` answers; updated when the batch ends. */
  object: Record<string, unknown>;
  webhookUrl: string | null;
  endsAt: number;
  endedAt: number | null;
}

export const BATCH_SCHEMA = `
CREATE TABLE IF NOT EXISTS files (
  id TEXT PRIMARY KEY,
  idempotency_key TEXT UNIQUE,
  purpose TEXT NOT NULL,
  filename TEXT NOT NULL,
  bytes BLOB NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS batches (
  id TEXT PRIMARY KEY,
  idempotency_key TEXT NOT NULL UNIQUE,
  object TEXT NOT NULL,
  webhook_url TEXT,
  ends_at INTEGER NOT NULL,
  ended_at INTEGER
);
CREATE TABLE IF NOT EXISTS batch_runs (
  scope TEXT NOT NULL,
  custom_id TEXT NOT NULL,
  PRIMARY KEY (scope, custom_id)
);
`;

interface FileRow {
  id: string;
  purpose: string;
  filename: string;
  bytes: Buffer;
  created_at: number;
}

interface BatchRow {
  id: string;
  idempotency_key: string;
  object: string;
  webhook_url: string | null;
  ends_at: number;
  ended_at: number | null;
}

/**
 * The simulator's files and batches, in the same SQLite database as its jobs (so a batch's
 * end and its event are stored in one transaction). `batch_runs` remembers which requests
 * of a scope (a task) have run once, for the failures a batch asks for on a first run only.
 */
export class SimBatchStore {
  readonly #db: Database.Database;

  constructor(db: Database.Database) {
    this.#db = db;
  }

  file(id: string): SimFile | undefined {
    const row = this.#db.prepare("SELECT * FROM files WHERE id = ?").get(id) as FileRow | undefined;
    return (
      row && {
        id: row.id,
        purpose: row.purpose,
        filename: row.filename,
        bytes: row.bytes,
        createdAt: row.created_at,
      }
    );
  }

  fileIdByKey(key: string): string | undefined {
    const row = this.#db.prepare("SELECT id FROM files WHERE idempotency_key = ?").get(key) as
      | { id: string }
      | undefined;
    return row?.id;
  }

  insertFile(file: SimFile, key: string | null): void {
    this.#db
      .prepare(
        "INSERT INTO files (id, idempotency_key, purpose, filename, bytes, created_at) VALUES (?, ?, ?, ?, ?, ?)",
      )
      .run(file.id, key, file.purpose, file.filename, file.bytes, file.createdAt);
  }

  batch(id: string): SimBatch | undefined {
    const row = this.#db.prepare("SELECT * FROM batches WHERE id = ?").get(id) as BatchRow | undefined;
    return row && toBatch(row);
  }

  batchByKey(key: string): SimBatch | undefined {
    const row = this.#db.prepare("SELECT * FROM batches WHERE idempotency_key = ?").get(key) as
      | BatchRow
      | undefined;
    return row && toBatch(row);
  }

  openBatches(): SimBatch[] {
    const rows = this.#db
      .prepare("SELECT * FROM batches WHERE ended_at IS NULL ORDER BY ends_at")
      .all() as BatchRow[];
    return rows.map(toBatch);
  }

  insertBatch(b: SimBatch): void {
    this.#db
      .prepare(
        "INSERT INTO batches (id, idempotency_key, object, webhook_url, ends_at) VALUES (?, ?, ?, ?, ?)",
      )
      .run(b.id, b.idempotencyKey, JSON.stringify(b.object), b.webhookUrl, b.endsAt);
  }

  /** Ends a batch with its final object; false, changing nothing, when it had ended. */
  endBatch(id: string, object: Record<string, unknown>, endedAt: number): boolean {
    return (
      this.#db
        .prepare("UPDATE batches SET object = ?, ended_at = ? WHERE id = ? AND ended_at IS NULL")
        .run(JSON.stringify(object), endedAt, id).changes === 1
    );
  }

  /** Records that `customId` ran in `scope`; true when this is its first run there. */
  firstRun(scope: string, customId: string): boolean {
    return (
      this.#db
        .prepare("INSERT INTO batch_runs (scope, custom_id) VALUES (?, ?) ON CONFLICT DO NOTHING")
        .run(scope, customId).changes === 1
    );
  }
}

function toBatch(r: BatchRow): SimBatch {
  return {
    id: r.id,
    idempotencyKey: r.idempotency_key,
    object: JSON.parse(r.object) as Record<string, unknown>,
    webhookUrl: r.webhook_url,
    endsAt: r.ends_at,
    endedAt: r.ended_at,
  };
}
