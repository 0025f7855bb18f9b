import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import ts from "typescript";
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

type Operation = {
  requestBody?: { content: Record<string, { schema: { required?: string[]; properties?: object } }> };
  responses: Record<
    string,
    { content?: Record<string, { schema: { properties?: Record<string, unknown> } }> }
  >;
};

/** The document with every `$ref` to a shared component replaced by the component itself. */
function dereferenced<T>(doc: T): T {
  const schemas = (doc as { components?: { schemas?: Record<string, unknown> } }).components?.schemas ?? {};
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (typeof node !== "object" || node === null) return node;
    const ref = (node as { $ref?: string }).$ref;
    if (ref?.startsWith("#/components/schemas/")) {
      const target = schemas[ref.slice("#/components/schemas/".length)];
      assert.ok(target, `${ref} resolves`);
      return walk(target);
    }
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, walk(v)]));
  };
  return { ...doc, paths: walk((doc as { paths: unknown }).paths) } as T;
}

test("every operation has a unique operationId and a declared tag, for code generators", async () => {
  const doc = (await served()) as Doc & { tags: { name: string }[] };
  const tags = new Set(doc.tags.map((t) => t.name));
  const ids: string[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops) as [string, { operationId?: string; tags?: string[] }][]) {
      const where = `${method.toUpperCase()} ${path}`;
      assert.match(op.operationId ?? "", /^[a-z][A-Za-z0-9]+$/, `${where} has an operationId`);
      assert.equal(op.tags?.length, 1, `${where} has one tag`);
      assert.ok(
        tags.has(op.tags![0]!),
        `${where}: its tag "${op.tags![0]}" is declared (add it to src/http/operations.ts)`,
      );
      ids.push(op.operationId!);
    }
  }
  assert.equal(new Set(ids).size, ids.length, "operationIds are unique");
});

test("the wire shapes are shared components, referenced by the routes that use them", async () => {
  const doc = (await served()) as Doc & { components: { schemas: Record<string, unknown> } };
  for (const name of ["ErrorBody", "TaskDetail", "SubmitResult", "WebhookEndpoint"]) {
    assert.ok(doc.components.schemas[name], `${name} is a component`);
  }
  const detail = doc.paths["/v1/tasks/{id}"]!.get as {
    responses: Record<string, { content: Record<string, { schema: { $ref?: string } }> }>;
  };
  assert.equal(
    detail.responses["200"]!.content["application/json"]!.schema.$ref,
    "#/components/schemas/TaskDetail",
  );
  assert.equal(
    detail.responses["4XX"]!.content["application/json"]!.schema.$ref,
    "#/components/schemas/ErrorBody",
  );
  dereferenced(doc); // every $ref resolves
});

test("GET /docs renders the reference from the document: every operation, no script, nothing fetched", async () => {
  const res = await fetch(`${stack.url}/docs`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /text\/html/);
  assert.match(res.headers.get("content-security-policy") ?? "", /default-src 'none'/);
  const html = await res.text();
  assert.doesNotMatch(html, /<script/i);
  const doc = await served();
  for (const ops of Object.values(doc.paths)) {
    for (const op of Object.values(ops) as { operationId: string }[]) {
      assert.ok(html.includes(`id="${op.operationId}"`), `${op.operationId} is on the page`);
    }
  }
  assert.ok(html.includes('id="schema-TaskDetail"'));
});

test("the document describes each route's body and answers from the schemas the route validates with", async () => {
  const doc = dereferenced(await served()) as unknown as { paths: Record<string, Record<string, Operation>> };
  const submit = doc.paths["/v1/tasks"]!.post!;
  assert.deepEqual(submit.requestBody?.content["application/json"]?.schema.required, ["type"]);
  const created = submit.responses["202"]?.content?.["application/json"]?.schema.properties ?? {};
  assert.deepEqual(Object.keys(created).sort(), ["created", "status", "task_id"]);
  const detail = doc.paths["/v1/tasks/{id}"]!.get!.responses["200"]?.content?.["application/json"]?.schema;
  assert.ok(detail?.properties?.steps && detail.properties.jobs, "a task's steps and jobs are described");
  const error = doc.paths["/v1/signals"]!.post!.responses["4XX"]?.content?.["application/json"]?.schema;
  assert.ok(error?.properties?.error, "errors are described");
  const rotate = doc.paths["/v1/webhook-endpoints/{id}/rotate-secret"]!.post! as Operation & {
    requestBody?: { required?: boolean };
  };
  assert.equal(rotate.requestBody?.required, false, "a body of optional fields may be left out");
  assert.equal((submit as { requestBody?: { required?: boolean } }).requestBody?.required, true);
  const decide = doc.paths["/v1/approvals/{token}"]!.post!.requestBody?.content ?? {};
  assert.deepEqual(Object.keys(decide).sort(), ["application/json", "application/x-www-form-urlencoded"]);
});

test("a request that breaks a route's schema answers 400 VALIDATION_FAILED naming the field", async () => {
  const cases: [string, { method?: string; body?: unknown }, RegExp][] = [
    ["/v1/tasks", { body: { type: "demo.echo", input: {}, client_request_id: 7 } }, /"client_request_id"/],
    ["/v1/tasks", { body: { input: {} } }, /"type" in the body is required/],
    ["/v1/tasks?limit=0", {}, /"limit" in the query string/],
    ["/v1/tasks?status=done", {}, /"status" in the query string must be one of "pending"/],
    ["/v1/signals", { body: { name: "x", id: "" } }, /"id"/],
    [
      "/v1/webhook-endpoints/we_x/rotate-secret",
      { body: { expire_previous_in_s: "60" } },
      /"expire_previous_in_s"/,
    ],
    ["/v1/webhook-endpoints", { body: { url: "https://example.com/", events: ["Nope!"] } }, /"events\.0"/],
  ];
  for (const [path, init, field] of cases) {
    const r = await stack.api(path, init);
    assert.equal(r.status, 400, `${path} ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error.code, "VALIDATION_FAILED");
    assert.match(r.body.error.message, field);
  }
});

test("longhaul/client imports nothing from outside src/client at run time, only types", () => {
  const dir = new URL("../src/client/", import.meta.url);
  const valueImports: string[] = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".ts"))) {
    const text = readFileSync(new URL(file, dir), "utf8");
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022);
    for (const node of source.statements) {
      let spec: string | null = null;
      let typeOnly = false;
      if (ts.isImportDeclaration(node)) {
        spec = (node.moduleSpecifier as ts.StringLiteral).text;
        typeOnly = node.importClause?.isTypeOnly === true;
      } else if (ts.isExportDeclaration(node) && node.moduleSpecifier) {
        spec = (node.moduleSpecifier as ts.StringLiteral).text;
        typeOnly = node.isTypeOnly;
      }
      if (spec === null || (spec.startsWith("./") && !spec.includes(".."))) continue;
      if (!typeOnly) valueImports.push(`${file}: ${spec}`);
    }
  }
  assert.deepEqual(valueImports, []);
});
