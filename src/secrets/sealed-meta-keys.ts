import { TOKEN_KEYS_META_KEY } from "../tokens/keyring.ts";

/**
 * The meta values that are secrets, sealed when an encryption key is set: generated token
 * keys, and what `longhaul dev` keeps (the simulator's signing secret, the development key).
 */
export const DEV_SIM_SECRET_META_KEY = "dev.sim_secret";
export const DEV_API_KEY_META_KEY = "dev.api_key";
export const SEALED_META_KEYS: readonly string[] = [
  TOKEN_KEYS_META_KEY,
  DEV_SIM_SECRET_META_KEY,
  DEV_API_KEY_META_KEY,
];
