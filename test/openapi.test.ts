import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { type Stack, startStack } from "./stack.ts";

let stack: Stack;
before(async () => {
  stack = await startStack();
});
after(() => stack.close());

type Doc = { openapi: string; paths: Record<string, Record<string, unknown>> };

async function served(): Promise<Doc> {
  const res = await fetch(`${stack.url}/openapi.json`);
  assert.equal(res.status, 200);
  return (await res.json()) as Doc;
}

/** The routes the server registered, as "METHOD /path/{}" with parameters made anonymous. */
function registeredRoutes(): Set<string> {
  const tree = stack.app.server.printRoutes({ commonPrefix: false });
  const routes = new Set<string>();
  const prefixAt: string[] = [];
  for (const line of tree.split("\n")) {
    const m = /^([\s│]*)[└├]── (\S+) \(([^)]*)\)/.exec(line);
    if (!m) continue;
    const depth = (m[1] ?? "").length / 4;
    const segment = m[2] ?? "";
    const parent = depth === 0 ? "" : (prefixAt[depth - 1] ?? "");
    const path =
      depth === 0
        ? segment
        : parent === "/" || segment.startsWith("/")
          ? parent + segment
          : `${parent}/${segment}`;
    prefixAt[depth] = path;
    for (const method of (m[3] ?? "").split(", ")) {
      if (method === "HEAD") continue;
      routes.add(`${method} ${path.replace(/:[A-Za-z_]+/g, "{}")}`);
    }
  }
  return routes;
}

test("GET /openapi.json passes the OpenAPI 3.1 schema validator", async () => {
  const doc = await served();
  assert.equal(doc.openapi, "3.1.0");
  const validator = new Validator();
  const result = await validator.validate(doc);
  assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
});

test("every route the server answers is in /openapi.json, and every documented route is answered", async () => {
  const doc = await served();
  const documented = new Set<string>();
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const method of Object.keys(ops)) {
      if (["get", "post", "put", "patch", "delete"].includes(method)) {
        documented.add(`${method.toUpperCase()} ${path.replace(/\{[^}]+\}/g, "{}")}`);
      }
    }
  }
  const registered = registeredRoutes();
  // The dashboard's page and its hashed assets are files, not API.
  const files = new Set(["GET /", "GET /assets/{}"]);
  const undocumented = [...registered].filter((r) => !documented.has(r) && !files.has(r)).sort();
  const unanswered = [...documented].filter((r) => !registered.has(r)).sort();
  assert.ok(registered.has("POST /v1/tasks"), "the route tree was read");
  assert.deepEqual(undocumented, [], "routes missing from /openapi.json");
  assert.deepEqual(unanswered, [], "documented routes the server does not answer");
});
