import { liveSecrets } from "../../core/endpoint-secrets.ts";
import { endpointSecretAt, metaValueAt } from "../../core/sealed-at.ts";
import { previousSecretsJson, previousSecretsOf } from "../rows.ts";
import type { Tx } from "../sql/tx.ts";

/*
 * Deployment-wide values: a small key-value table for settings (generated secrets, token
 * keys), and the reseal of every secret stored at rest, endpoint secrets included
 * (ARCHITECTURE §4.9). No locks beyond the rows', no events, nothing enqueued.
 */

export async function getMeta(tx: Tx, key: string): Promise<string | null> {
  return (await tx.get<{ value: string }>("SELECT value FROM meta WHERE key = ?", [key]))?.value ?? null;
}

/** Sets `key` unless it is set; returns the stored value (the first writer's, when two race). */
export async function putMetaIfAbsent(tx: Tx, key: string, value: string): Promise<string> {
  await tx.run("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", [key, value]);
  return (await getMeta(tx, key))!;
}

/**
 * Rewrites stored secrets as `reseal` maps them, given each one's place, and drops expired
 * previous endpoint secrets. Each update names the value it read, so a secret rotated
 * meanwhile (by another node) is left alone rather than overwritten. Row locks of its
 * UPDATEs only; no events, nothing enqueued.
 */
export async function resealSecrets(
  tx: Tx,
  reseal: (stored: string, at: string) => string,
  metaKeys: readonly string[],
): Promise<number> {
  let changed = 0;
  const now = tx.clock.now();
  const rows = await tx.all<{ id: string; secret: string; previous_secrets: string }>(
    "SELECT id, secret, previous_secrets FROM webhook_endpoints ORDER BY id",
  );
  for (const r of rows) {
    const at = endpointSecretAt(r.id);
    const secret = reseal(r.secret, at);
    const kept = liveSecrets(previousSecretsOf(r), now);
    const previous = previousSecretsJson(kept.map((p) => ({ ...p, secret: reseal(p.secret, at) })));
    if (secret !== r.secret || previous !== r.previous_secrets) {
      changed += await tx.run(
        `UPDATE webhook_endpoints SET secret = ?, previous_secrets = ?
          WHERE id = ? AND secret = ? AND previous_secrets = ?`,
        [secret, previous, r.id, r.secret, r.previous_secrets],
      );
    }
  }
  for (const key of metaKeys) {
    const value = (await tx.get<{ value: string }>("SELECT value FROM meta WHERE key = ?", [key]))?.value;
    if (value === undefined) continue;
    const next = reseal(value, metaValueAt(key));
    if (next !== value) {
      changed += await tx.run("UPDATE meta SET value = ? WHERE key = ? AND value = ?", [next, key, value]);
    }
  }
  return changed;
}
