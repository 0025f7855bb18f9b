import { escapeHtml as esc, htmlPageHeaders } from "./page-headers.ts";

/** The page's own policy: its one inline stylesheet, no script, nothing fetched. */
export const REFERENCE_PAGE_POLICY = "default-src 'none'; style-src 'unsafe-inline'";
export const referencePageHeaders = () => htmlPageHeaders(REFERENCE_PAGE_POLICY);

type Schema = Record<string, unknown>;
interface Op {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: { name: string; in: string; required?: boolean; schema?: Schema; description?: string }[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: Schema }> }>;
}
interface Doc {
  info?: { title?: string; description?: string };
  tags?: { name: string; description?: string }[];
  paths?: Record<string, Record<string, Op>>;
  components?: { schemas?: Record<string, Schema> };
}

const json = (v: unknown) => `<pre>${esc(JSON.stringify(v, null, 2))}</pre>`;
const refName = (s: Schema | undefined) =>
  typeof s?.$ref === "string" ? (s.$ref as string).replace("#/components/schemas/", "") : undefined;

function schemaView(s: Schema | undefined): string {
  if (!s) return "";
  const name = refName(s);
  if (name) return `<a href="#schema-${esc(name)}"><code>${esc(name)}</code></a>`;
  return `<details><summary>schema</summary>${json(s)}</details>`;
}

function operationView(method: string, path: string, op: Op): string {
  const params = (op.parameters ?? [])
    .map(
      (p) =>
        `<tr><td><code>${esc(p.name)}</code></td><td>${esc(p.in)}</td><td>${p.required ? "required" : ""}</td><td>${esc(p.schema?.type ?? "")}</td><td>${esc(p.description ?? p.schema?.description ?? "")}</td></tr>`,
    )
    .join("");
  const body = Object.entries(op.requestBody?.content ?? {})
    .map(([type, m]) => `<p>Body (<code>${esc(type)}</code>): ${schemaView(m.schema)}</p>`)
    .join("");
  const answers = Object.entries(op.responses ?? {})
    .map(([status, r]) => {
      const shapes = Object.values(r.content ?? {}).map((m) => schemaView(m.schema));
      return `<li><b>${esc(status)}</b> ${esc(r.description ?? "")} ${shapes.join(" ")}</li>`;
    })
    .join("");
  const auth = op.security && op.security.length === 0 ? "no API key" : "API key (Bearer)";
  return `<section class="op" id="${esc(op.operationId ?? `${method}-${path}`)}">
<h3><span class="m m-${esc(method)}">${esc(method.toUpperCase())}</span> <code>${esc(path)}</code></h3>
<p>${esc(op.summary ?? "")}</p>
<p class="meta"><code>${esc(op.operationId ?? "")}</code> · ${auth}</p>
${params ? `<table><tr><th>parameter</th><th>in</th><th></th><th>type</th><th></th></tr>${params}</table>` : ""}
${body}
${answers ? `<ul>${answers}</ul>` : ""}
</section>`;
}

/**
 * The API reference as one HTML page, rendered on the server from `/openapi.json`: operations
 * by tag, each with its id, parameters, body and answers, and the shared shapes at the end. No
 * script and nothing fetched, so it works offline and under a strict policy.
 */
export function renderReferencePage(doc: Doc): string {
  const byTag = new Map<string, string[]>();
  for (const t of doc.tags ?? []) byTag.set(t.name, []);
  for (const [path, ops] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(ops)) {
      const tag = op.tags?.[0] ?? "Other";
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag)?.push(operationView(method, path, op));
    }
  }
  const described = new Map((doc.tags ?? []).map((t) => [t.name, t.description ?? ""]));
  const sections = [...byTag]
    .filter(([, ops]) => ops.length > 0)
    .map(
      ([tag, ops]) =>
        `<h2 id="tag-${esc(tag)}">${esc(tag)}</h2><p>${esc(described.get(tag) ?? "")}</p>${ops.join("\n")}`,
    )
    .join("\n");
  const nav = [...byTag]
    .filter(([, ops]) => ops.length > 0)
    .map(([tag]) => `<a href="#tag-${esc(tag)}">${esc(tag)}</a>`)
    .join(" · ");
  const schemas = Object.entries(doc.components?.schemas ?? {})
    .map(
      ([name, s]) =>
        `<section id="schema-${esc(name)}"><h3><code>${esc(name)}</code></h3>${json(s)}</section>`,
    )
    .join("\n");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(doc.info?.title ?? "API")} API reference</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;margin:0 auto;max-width:960px;padding:1rem 1.5rem;color:#1d2430}
code,pre{font:13px ui-monospace,monospace}pre{background:#f4f6f8;padding:.6rem;overflow:auto;max-height:28rem}
.op{border-top:1px solid #dde2e8;padding:.4rem 0}.m{display:inline-block;min-width:4.2rem;font-size:12px;text-align:center;border-radius:3px;color:#fff;padding:1px 4px}
.m-get{background:#2f7d4f}.m-post{background:#2b5fab}.m-patch{background:#8a5a00}.m-delete{background:#a3302a}.m-put{background:#6b3fa0}
.meta{color:#5b6676;font-size:13px}table{border-collapse:collapse}td,th{border:1px solid #dde2e8;padding:2px 6px;font-size:13px;text-align:left}
nav{position:sticky;top:0;background:#fff;padding:.4rem 0;border-bottom:1px solid #dde2e8}
</style></head><body>
<h1>${esc(doc.info?.title ?? "API")} API reference</h1>
<p>${esc(doc.info?.description ?? "")} The machine-readable document: <a href="/openapi.json"><code>/openapi.json</code></a>.</p>
<nav>${nav} · <a href="#schemas">Schemas</a></nav>
${sections}
<h2 id="schemas">Schemas</h2>
${schemas}
</body></html>`;
}
