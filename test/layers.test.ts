import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { test } from "node:test";
import ts from "typescript";

// The layering of src is the table in docs/ARCHITECTURE.md §5: each folder names the folders
// it may import. This reads the table and every import of src and web/src, so a change that
// crosses a layer fails here, and so does a folder the table does not name.

const ROOT = resolve(import.meta.dirname, "..");
const SRC = join(ROOT, "src");

/** A folder's row: the folders (under src) it may import, or all of them. */
type Rule = { kind: "only"; folders: Set<string> } | { kind: "all-but"; folders: Set<string> };

/** The rows of ARCHITECTURE §5, keyed by folder as a layer name: `core`, `app.ts`, `web`. */
export function readLayoutTable(markdown: string): Map<string, Rule> {
  const start = markdown.indexOf("## 5. Layout");
  const end = markdown.indexOf("\n## ", start + 1);
  assert.ok(start >= 0, "ARCHITECTURE.md has a section '## 5. Layout'");
  const rules = new Map<string, Rule>();
  for (const line of markdown.slice(start, end < 0 ? undefined : end).split("\n")) {
    const cells = line.split("|").map((c) => c.trim());
    if (cells.length < 5 || !cells[1]?.startsWith("`")) continue;
    const folder = layerOfDocName(cells[1].replaceAll("`", ""));
    const mayImport = cells[3] ?? "";
    const named = new Set([...mayImport.matchAll(/`([^`]+)`/g)].map((m) => layerOfDocName(m[1]!)));
    if (mayImport.startsWith("everything except")) rules.set(folder, { kind: "all-but", folders: named });
    else if (mayImport.startsWith("everything")) rules.set(folder, { kind: "all-but", folders: new Set() });
    else rules.set(folder, { kind: "only", folders: named });
  }
  return rules;
}

function layerOfDocName(name: string): string {
  return name.startsWith("src/") ? name.slice(4) : name;
}

/** The layer a file belongs to: its first folder under src, a file at src's top, or `web`. */
function layerOf(file: string): string | null {
  const rel = relative(SRC, file);
  if (rel.startsWith("..")) return relative(ROOT, file).startsWith(`web${sep}`) ? "web" : null;
  return rel.split(sep)[0]!;
}

/** Every module specifier a file imports or re-exports, static or dynamic, type-only included. */
export function importsOf(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      found.push(node.arguments[0].text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      const lit = node.argument.literal;
      if (ts.isStringLiteral(lit)) found.push(lit.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** `file: specifier (layer → layer)` for each import the table does not allow. */
export function violations(files: ReadonlyMap<string, string>, rules: ReadonlyMap<string, Rule>): string[] {
  const out: string[] = [];
  for (const [file, text] of files) {
    const from = layerOf(file);
    if (from === null) continue;
    const rule = rules.get(from);
    if (!rule) {
      out.push(`${relative(ROOT, file)}: the layer "${from}" has no row in ARCHITECTURE §5`);
      continue;
    }
    for (const spec of importsOf(file, text)) {
      if (!spec.startsWith(".")) continue; // a package
      const target = resolve(dirname(file), spec);
      if (relative(SRC, target).startsWith("..")) continue; // outside src: package.json, assets
      const to = layerOf(target)!;
      if (to === from) continue;
      const allowed = rule.kind === "only" ? rule.folders.has(to) : !rule.folders.has(to);
      if (!allowed) out.push(`${relative(ROOT, file)}: ${spec} (${from} → ${to})`);
    }
  }
  return out;
}

/** The files of src that `file` imports (relative specifiers only), as absolute paths. */
function localImports(file: string, text: string): string[] {
  return importsOf(file, text)
    .filter((spec) => spec.startsWith("."))
    .map((spec) => resolve(dirname(file), spec));
}

/**
 * Rules file by file, beside the table's folder by folder (ARCHITECTURE §5): the ops shared by
 * both stores never reach into a dialect, and the layers that use the store see its interface.
 */
const FILE_RULES: readonly { from: RegExp; to: RegExp; allowed?: RegExp; why: string }[] = [
  { from: /^store\/ops\//, to: /^store\/(sqlite|postgres)\//, why: "a shared op imports a dialect" },
  {
    from: /^(usecases|engine|http)\//,
    to: /^store\//,
    allowed: /^store\/store\.ts$/,
    why: "the store's interface is store/store.ts",
  },
];

/** `file: specifier (why)` for each import a file rule forbids. */
export function fileViolations(files: ReadonlyMap<string, string>): string[] {
  const out: string[] = [];
  for (const [file, text] of files) {
    const from = relative(SRC, file).split(sep).join("/");
    for (const target of localImports(file, text)) {
      const to = relative(SRC, target).split(sep).join("/");
      for (const rule of FILE_RULES) {
        if (rule.from.test(from) && rule.to.test(to) && !rule.allowed?.test(to)) {
          out.push(`src/${from}: ${to} (${rule.why})`);
        }
      }
    }
  }
  return out;
}

/**
 * The import circles among `files`, type-only imports included: each as its files (relative
 * to src) in sorted order. A circle means two modules are one concept, or one of them holds
 * something that belongs to neither.
 */
export function importCircles(files: ReadonlyMap<string, string>): string[][] {
  const edges = new Map<string, string[]>();
  for (const [file, text] of files)
    edges.set(
      file,
      localImports(file, text).filter((t) => files.has(t)),
    );
  // Tarjan's strongly connected components.
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(relative(SRC, w).split(sep).join("/"));
    } while (w !== v);
    const selfImport = edges.get(v)?.includes(v) ?? false;
    if (component.length > 1 || selfImport) circles.push(component.sort());
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return circles;
}

function sourceFiles(dir: string, out: Map<string, string>): Map<string, string> {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      if (name !== "node_modules" && name !== "dist") sourceFiles(p, out);
    } else if (/\.tsx?$/.test(name) && !name.endsWith(".d.ts")) out.set(p, readFileSync(p, "utf8"));
  }
  return out;
}

const table = () => readLayoutTable(readFileSync(join(ROOT, "docs", "ARCHITECTURE.md"), "utf8"));

test("every import in src and web/src is one ARCHITECTURE §5 allows", () => {
  const files = sourceFiles(SRC, new Map());
  sourceFiles(join(ROOT, "web", "src"), files);
  assert.deepEqual(violations(files, table()), []);
});

test("the layout table pins the layering the issue asks for", () => {
  const rules = table();
  const may = (from: string, to: string) => {
    const r = rules.get(from);
    assert.ok(r, `a row for ${from}`);
    return r.kind === "only" ? r.folders.has(to) : !r.folders.has(to);
  };
  for (const other of ["store", "engine", "http", "providers", "tokens", "metrics", "cli"]) {
    assert.equal(may("core", other), false, `core may not import ${other}`);
    assert.equal(may("client", other), false, `client may not import ${other}`);
  }
  for (const other of ["providers", "http", "engine"]) assert.equal(may("store", other), false);
  assert.equal(may("engine", "http"), false);
  for (const other of ["core", "store", "engine", "http", "providers", "app.ts"])
    assert.equal(may("cli", other), true);
  assert.equal(may("web", "client"), true);
  assert.equal(may("web", "core"), false);
});

test("an import across a layer the table forbids is reported, type-only and dynamic ones too", () => {
  const rules = readLayoutTable(
    [
      "## 5. Layout",
      "| folder | owns | may import |",
      "| --- | --- | --- |",
      "| `src/core` | domain | nothing outside `core` |",
      "| `src/engine` | worker | `core` |",
      "| `src/cli` | commands | everything |",
      "## 6. Next",
    ].join("\n"),
  );
  const files = new Map([
    [
      join(SRC, "core", "a.ts"),
      'import type { Store } from "../store/store.ts";\nimport { x } from "./x.ts";',
    ],
    [join(SRC, "engine", "b.ts"), 'const m = await import("../http/metrics.ts");\nimport "node:fs";'],
    [join(SRC, "cli", "c.ts"), 'export { y } from "../http/y.ts";'],
    [join(SRC, "wire", "d.ts"), 'import { z } from "../core/z.ts";'],
  ]);
  assert.deepEqual(violations(files, rules), [
    "src/core/a.ts: ../store/store.ts (core → store)",
    "src/engine/b.ts: ../http/metrics.ts (engine → http)",
    'src/wire/d.ts: the layer "wire" has no row in ARCHITECTURE §5',
  ]);
});

test("every file follows the file rules of ARCHITECTURE §5, and src has no import circle", () => {
  const files = sourceFiles(SRC, new Map());
  assert.deepEqual(fileViolations(files), []);
  assert.deepEqual(importCircles(files), []);
});

test("an http → engine import, a store/ops → store/sqlite import and an import circle are each reported", () => {
  assert.deepEqual(
    violations(
      new Map([[join(SRC, "http", "x.ts"), 'import type { Worker } from "../engine/worker.ts";']]),
      table(),
    ),
    ["src/http/x.ts: ../engine/worker.ts (http → engine)"],
  );
  assert.deepEqual(
    fileViolations(
      new Map([
        [
          join(SRC, "store", "ops", "a-ops.ts"),
          'import { db } from "../sqlite/db.ts";\nimport { t } from "../sql/tx.ts";',
        ],
        [
          join(SRC, "engine", "b.ts"),
          'import type { Store } from "../store/store.ts";\nimport { x } from "../store/sqlite/x.ts";',
        ],
      ]),
    ),
    [
      "src/store/ops/a-ops.ts: store/sqlite/db.ts (a shared op imports a dialect)",
      "src/engine/b.ts: store/sqlite/x.ts (the store's interface is store/store.ts)",
    ],
  );
  assert.deepEqual(
    importCircles(
      new Map([
        [join(SRC, "graph", "a.ts"), 'import { b } from "./b.ts";'],
        [join(SRC, "graph", "b.ts"), 'import type { C } from "./c.ts";'],
        [join(SRC, "graph", "c.ts"), 'import type { A } from "./a.ts";'],
        [join(SRC, "graph", "d.ts"), 'import { a } from "./a.ts";'],
      ]),
    ),
    [["graph/a.ts", "graph/b.ts", "graph/c.ts"]],
  );
});
