import { readFile } from "node:fs/promises";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { isLoopbackAddress, isLoopbackHost } from "./loopback.ts";
import { escapeHtml, htmlPageHeaders } from "./page-headers.ts";

export interface DashboardOptions {
  /**
   * Under `longhaul dev` only: the development tenant's key, written into the page so the
   * dashboard opens signed in, for a browser on this machine only. Without it, or for any
   * other caller, the dashboard asks for a key.
   */
  devApiKey?: string | undefined;
  /** The built app (`npm run build`). Default `web/dist` of this package. */
  distDir?: string | undefined;
}

const defaultDist = fileURLToPath(new URL("../../web/dist/", import.meta.url));

const contentTypes: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
};

// Asset names are flat, with a content hash: nothing else is served from disk.
const ASSET = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;

// Never cached: the page may carry the development key, and must pick up new asset hashes at once.
const pageHeaders = htmlPageHeaders(
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'; form-action 'self'",
);

const escapeAttr = escapeHtml;

const notBuilt = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>longhaul — dashboard not built</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;color:#1f2933}
code{background:#eef1f4;padding:.1rem .3rem;border-radius:4px}</style></head>
<body><h1>The dashboard has not been built</h1>
<p>The API is up; only the dashboard's files are missing. Build them with
<code>npm run build</code> (<code>npm install</code> and <code>npm ci</code> run it too), then reload this page.</p>
</body></html>`;

/**
 * `GET /` and `GET /assets/*`: the dashboard (ARCHITECTURE §7). The page is read from the build on
 * each request, so a rebuild shows without a restart; assets carry a content hash in their
 * name and are cached for a year. A missing build answers 503 with what to do.
 */
export function dashboardRoutes(app: FastifyInstance, opts: DashboardOptions = {}): void {
  const dist = opts.distDir ?? defaultDist;
  const devMeta = opts.devApiKey
    ? `<meta name="longhaul-dev-key" content="${escapeAttr(opts.devApiKey)}">`
    : "";

  // The key goes only to a peer on this machine that named it by loopback: a page reached
  // from another machine, or under another name (a proxy, DNS rebinding), is served without it.
  const devMetaFor = (req: FastifyRequest) =>
    devMeta && isLoopbackAddress(req.socket.remoteAddress) && isLoopbackHost(req.headers.host) ? devMeta : "";

  const page = async (req: FastifyRequest, reply: FastifyReply) => {
    let html: string;
    try {
      html = await readFile(join(dist, "index.html"), "utf8");
    } catch {
      return reply.status(503).headers(pageHeaders).send(notBuilt);
    }
    const meta = devMetaFor(req);
    return reply
      .status(200)
      .headers(pageHeaders)
      .send(meta ? html.replace("</head>", `${meta}</head>`) : html);
  };

  // Files, not API: left out of /openapi.json.
  app.get("/", { schema: { hide: true } }, async (req, reply) => page(req, reply));

  app.get<{ Params: { file: string } }>("/assets/:file", { schema: { hide: true } }, async (req, reply) => {
    const name = req.params.file;
    const type = contentTypes[extname(name)];
    const body =
      ASSET.test(name) && type ? await readFile(join(dist, "assets", name)).catch(() => null) : null;
    if (!body) {
      return reply
        .status(404)
        .send({ error: { code: "NOT_FOUND", message: `No dashboard asset ${name}; reload the page.` } });
    }
    return reply
      .status(200)
      .headers({
        "content-type": type!,
        "cache-control": "public, max-age=31536000, immutable",
        "x-content-type-options": "nosniff",
      })
      .send(body);
  });
}
