import type { Tx } from "../sql/tx.ts";

/*
 * A small key-value table for deployment settings (generated secrets, token keys). No locks
 * beyond the row's, no events, nothing enqueued.
 */

export async function getMeta(tx: Tx, key: string): Promise<string | null> {
  return (await tx.get<{ value: string }>("SELECT value FROM meta WHERE key = ?", [key]))?.value ?? null;
}

/** Sets `key` unless it is set; returns the stored value (the first writer's, when two race). */
export async function putMetaIfAbsent(tx: Tx, key: string, value: string): Promise<string> {
  await tx.run("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", [key, value]);
  return (await getMeta(tx, key))!;
}
