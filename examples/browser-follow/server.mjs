// The tenant's backend: it holds the API key, submits a task for the visitor, mints a read
// token for that task alone (POST /v1/tokens) and serves the page. The page gets the task id
// and the token, never the key.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";

const PAGE = readFileSync(new URL("./index.html", import.meta.url));

/** Starts the backend; answers its URL. */
export async function startExample({
  longhaulUrl,
  apiKey,
  taskType = "demo.echo",
  input = { text: "hello from the browser", delay_ms: 500 },
  port = 0,
}) {
  const api = (path, body) =>
    fetch(`${longhaulUrl}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    }).then(async (r) => {
      const json = await r.json();
      if (!r.ok) throw new Error(`${path}: ${r.status} ${JSON.stringify(json)}`);
      return json;
    });

  const server = createServer(async (req, res) => {
    try {
      if (req.method === "GET" && req.url === "/") {
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
        return res.end(PAGE);
      }
      if (req.method === "POST" && req.url === "/follow") {
        const task = await api("/v1/tasks", { type: taskType, input });
        const minted = await api("/v1/tokens", { scope: { task_id: task.task_id }, ttl: 600 });
        res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" });
        return res.end(
          JSON.stringify({
            api: longhaulUrl,
            task_id: task.task_id,
            token: minted.token,
            expires_at: minted.expires_at,
          }),
        );
      }
      res.writeHead(404).end();
    } catch (err) {
      res.writeHead(502, { "content-type": "text/plain" }).end(String(err.message ?? err));
    }
  });
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((r) => server.close(r)),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { url } = await startExample({
    longhaulUrl: process.env.LONGHAUL_URL ?? "http://127.0.0.1:3000",
    apiKey: process.env.LONGHAUL_API_KEY ?? "",
    port: Number(process.env.PORT ?? 8080),
  });
  console.log(`open ${url}`);
}
