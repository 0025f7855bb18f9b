import { LonghaulError } from "../core/errors.ts";
import type { Scheme } from "./scheme.ts";
import { standardWebhooks } from "./standard-webhooks.ts";

/** A configured webhook endpoint `/hooks/:name` (DESIGN §4.3). */
export interface Source {
  name: string;
  provider: string;
  scheme: Scheme;
  /** Several for rotation: a delivery signed with any one of them is accepted. */
  secrets: string[];
  toleranceS: number;
  bodyLimit: number;
}

/** The `sources` entry of the configuration file, as users write it. */
export interface SourceConfig {
  provider: string;
  scheme?: string;
  secrets: string[];
  tolerance_s?: number;
  body_limit?: number;
}

const schemes: Record<string, Scheme> = { "standard-webhooks": standardWebhooks };

export function buildSource(name: string, c: SourceConfig): Source {
  const scheme = schemes[c.scheme ?? "standard-webhooks"];
  if (!scheme) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      `Source "${name}" names scheme "${c.scheme}"; known schemes: ${Object.keys(schemes).join(", ")}.`,
    );
  }
  if (
    !Array.isArray(c.secrets) ||
    c.secrets.length === 0 ||
    !c.secrets.every((s) => typeof s === "string" && s)
  ) {
    throw new LonghaulError("CONFIG_INVALID", `Source "${name}" needs at least one secret in "secrets".`);
  }
  if (typeof c.provider !== "string" || !c.provider) {
    throw new LonghaulError("CONFIG_INVALID", `Source "${name}" needs a "provider".`);
  }
  return {
    name,
    provider: c.provider,
    scheme,
    secrets: c.secrets,
    toleranceS: c.tolerance_s ?? 300,
    bodyLimit: c.body_limit ?? 1024 * 1024,
  };
}
