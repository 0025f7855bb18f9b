import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { LonghaulError } from "../core/errors.ts";
import { LISTEN_PATTERN } from "../core/settings.ts";
import type { Metrics } from "../metrics/metrics.ts";

/** `host:port` (`[::1]:9464` for IPv6) of the `metrics.listen` setting. CONFIG_INVALID. */
export function parseListen(listen: string): { host: string; port: number } {
  const m = LISTEN_PATTERN.exec(listen);
  const port = Number(m?.[3]);
  if (!m || port > 65_535) {
    throw new LonghaulError(
      "CONFIG_INVALID",
      `metrics.listen must be host:port, such as "127.0.0.1:9464" or "[::1]:9464", not ${JSON.stringify(listen)}.`,
    );
  }
  return { host: (m[1] ?? m[2])!, port };
}

/**
 * `GET /metrics` on an address of its own, without a key: for a scraper on a private network
 * while the API faces the internet. Nothing else is served there.
 */
export async function startMetricsServer(
  metrics: Metrics,
  listen: string,
): Promise<{ url: string; close(): Promise<void> }> {
  const { host, port } = parseListen(listen);
  const registry = metrics.registry;
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method !== "GET" || path !== "/metrics") {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { code: "NOT_FOUND", message: "Only GET /metrics is served here." } }));
      return;
    }
    registry.metrics().then(
      (text) => {
        res.writeHead(200, { "content-type": registry.contentType });
        res.end(text);
      },
      () => {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { code: "INTERNAL", message: "Metrics could not be collected." } }));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const a = server.address() as AddressInfo;
  const shown = a.family === "IPv6" ? `[${a.address}]` : a.address;
  return {
    url: `http://${shown}:${a.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
