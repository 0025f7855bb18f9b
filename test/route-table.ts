import type { Stack } from "./stack.ts";

/** Non-GET routes under /v1 of the server's route table, read from Fastify's own tree of it. */
export function writeRoutes(stack: Stack): Array<{ method: string; url: string }> {
  const text = stack.app.server.printRoutes({ commonPrefix: false });
  const out: Array<{ method: string; url: string }> = [];
  // Each line is a segment at a depth given by its column; its path is its ancestors' and its own.
  const prefix = new Map<number, string>();
  for (const line of text.split("\n")) {
    const m = /^([│ ├└─]*?)[├└]── (\S+)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) continue;
    const col = m[1]!.length;
    const parent = [...prefix.entries()].filter(([c]) => c < col).sort(([a], [b]) => b - a)[0]?.[1] ?? "";
    const url = parent + m[2]!;
    for (const c of [...prefix.keys()]) if (c >= col) prefix.delete(c);
    prefix.set(col, url);
    for (const method of (m[3] ?? "").split(", ")) {
      if (method && method !== "GET" && method !== "HEAD" && url.startsWith("/v1/"))
        out.push({ method, url });
    }
  }
  return out;
}
