// What `longhaul dev` takes, and what the server a `--watch` supervisor runs tells it.

export interface DevOptions {
  port: number;
  host: string;
  simPort: number;
  dataDir: string;
  config?: string;
  databaseUrl?: string;
  logLevel: string;
  watch?: boolean;
  checkConfig?: boolean;
  sources: Record<string, string | undefined>;
}

/** Set in the environment of the server a `--watch` supervisor runs (src/cli/dev-watch.ts): its generation, from 1. */
export const DEV_GENERATION_VARIABLE = "LONGHAUL_DEV_GENERATION";

/** What the server `dev --watch` runs tells its supervisor once it listens. */
export interface DevReady {
  type: "ready";
  url: string;
  taskTypes: string[];
}
