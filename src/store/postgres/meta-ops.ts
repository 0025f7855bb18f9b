import type { Ctx } from "./db.ts";

/** A small key-value table for deployment settings (generated secrets, token keys). */
export async function getMeta(c: Ctx, key: string): Promise<string | null> {
  return (await c.sql.get<{ value: string }>("SELECT value FROM meta WHERE key = $1", [key]))?.value ?? null;
}

/** Sets `key` unless it is set; returns the stored value (the first writer's, when two race). */
export async function putMetaIfAbsent(c: Ctx, key: string, value: string): Promise<string> {
  await c.sql.run("INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING", [key, value]);
  return (await getMeta(c, key))!;
}
