import type { Tx } from "./tx.ts";

/** A column's half-open range `[from, before)`; an undefined end is left open. */
export interface ColumnRange {
  from?: number | undefined;
  before?: number | undefined;
}

/**
 * One page of `table`, newest id first: the rows whose columns equal the given filters (an
 * undefined filter is left out), lie in the given ranges, and whose id sorts before `cursor`.
 * Ids are ULIDs, so id order is creation order and the last id of a page is the next page's
 * cursor. `table` and the filter and range columns come from code, never from a request.
 */
export async function pageById<R extends { id: string }>(
  tx: Tx,
  table: string,
  filters: Record<string, unknown>,
  q: { limit: number; cursor?: string | undefined },
  ranges: Record<string, ColumnRange> = {},
): Promise<{ rows: R[]; nextCursor: string | null }> {
  const where: string[] = [];
  const params: unknown[] = [];
  for (const [column, value] of Object.entries(filters)) {
    if (value === undefined || value === null || value === "") continue;
    where.push(`${column} = ?`);
    params.push(value);
  }
  for (const [column, r] of Object.entries(ranges)) {
    if (r.from !== undefined) {
      where.push(`${column} >= ?`);
      params.push(r.from);
    }
    if (r.before !== undefined) {
      where.push(`${column} < ?`);
      params.push(r.before);
    }
  }
  if (q.cursor) {
    where.push("id < ?");
    params.push(q.cursor);
  }
  const rows = await tx.all<R>(
    `SELECT * FROM ${table}${where.length ? ` WHERE ${where.join(" AND ")}` : ""} ORDER BY id DESC LIMIT ?`,
    [...params, q.limit + 1],
  );
  const page = rows.slice(0, q.limit);
  return { rows: page, nextCursor: rows.length > q.limit ? (page.at(-1)?.id ?? null) : null };
}
