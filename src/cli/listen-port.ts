import { LonghaulError } from "../core/errors.ts";
/** `--port`, else LONGHAUL_PORT, else PORT (as platforms that assign one set it), else the default. */
export function listenPort(o: { port: number; sources: Record<string, string | undefined> }): number {
  const fallback = process.env.PORT;
  if (o.sources.port !== "default" || !fallback) return o.port;
  const n = Number(fallback);
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    throw new LonghaulError("CONFIG_INVALID", `PORT must be a port number from 0 to 65535; got ${fallback}.`);
  }
  return n;
}
