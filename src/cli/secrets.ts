import { LonghaulError } from "../core/errors.ts";
import { SEALED_META_KEYS } from "../secrets/sealed-meta-keys.ts";
import { type SecretBox, secretBoxFrom } from "../secrets/secret-box.ts";
import type { MetaStore } from "../store/store.ts";
import { databaseUrl, openMigratedStore } from "./store.ts";

/**
 * Moves every stored secret to the writing key of `box`, bound to its place. A start never
 * does this (src/app.ts): only the operator knows that every node already lists that key.
 * CONFIG_INVALID, naming the place, for a value no key of `box` opens; nothing is changed then.
 */
export async function resealUnderWritingKey(store: MetaStore, box: SecretBox): Promise<number> {
  return store.resealSecrets((stored, at) => box.reseal(stored, at), SEALED_META_KEYS);
}

/** `longhaul secrets reseal`: on the store of --database-url, with the keys of the environment. */
export async function secretsReseal(o: { databaseUrl?: string }): Promise<void> {
  const box = secretBoxFrom(undefined);
  if (!box.enabled) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      "No LONGHAUL_SECRET_KEY is set, so there is no key to reseal under; set the key every node now writes with.",
    );
  }
  const store = await openMigratedStore(databaseUrl(o.databaseUrl));
  try {
    const changed = await resealUnderWritingKey(store, box);
    console.log(
      `Resealed ${changed} stored ${changed === 1 ? "value" : "values"}: every stored secret is now under key ${box.activeKeyId}, so the other keys can leave LONGHAUL_SECRET_KEYS.`,
    );
  } finally {
    await store.close();
  }
}
