import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

// The repository must build, test and run with nothing beside it: a clone in an empty folder
// passes `npm test`. These checks keep anything from reaching outside it again.

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const skipDirs = new Set(["node_modules", ".git", "dist", ".longhaul", ".bench-data"]);
const textFile = /\.(ts|tsx|mjs|js|json|md|sql|sh|html|css)$|^run$/;

function files(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (skipDirs.has(name)) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) files(p, out);
    else if (textFile.test(name)) out.push(p);
  }
  return out;
}

const here = fileURLToPath(import.meta.url);
const all = files(root).filter((f) => f !== here && !f.endsWith("package-lock.json"));
const code = all.filter((f) => /\.(ts|tsx|mjs|js)$|^run$/.test(f.split(sep).pop() ?? ""));

test("no code, test, bench or script refers to a relative path outside the repository", () => {
  const outside: string[] = [];
  const literal = /["'`]((?:\.\.\/)+[^"'`\s]*)["'`]/g;
  for (const f of code) {
    const text = readFileSync(f, "utf8");
    for (const m of text.matchAll(literal)) {
      const target = resolve(dirname(f), m[1] ?? "");
      if (relative(root, target).startsWith("..")) outside.push(`${relative(root, f)}: ${m[1]}`);
    }
  }
  assert.deepEqual(outside, []);
});

test("nothing in the repository names a document or folder that lives outside it", () => {
  // Spelled in pieces so this file does not match itself.
  const banned = [
    ["DESIGN", " §"],
    ["DESIGN", ".md"],
    ["shared", "/vectors"],
    ["/work", "/"],
  ].map((parts) => parts.join(""));
  const found: string[] = [];
  for (const f of all) {
    const text = readFileSync(f, "utf8");
    for (const word of banned) if (text.includes(word)) found.push(`${relative(root, f)}: ${word}`);
  }
  assert.deepEqual(found, []);
});

test("the signature vectors the ingress tests reproduce are kept in the repository", () => {
  const vectors = JSON.parse(readFileSync(join(root, "test/fixtures/webhook-signatures.json"), "utf8")) as {
    vectors: { scheme: string }[];
  };
  assert.ok(vectors.vectors.length > 0);
  assert.ok(vectors.vectors.some((v) => v.scheme === "standard-webhooks"));
});

test("the repository carries its license and the architecture it describes", () => {
  assert.match(readFileSync(join(root, "LICENSE"), "utf8"), /Apache License\s+Version 2\.0/);
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { license: string };
  assert.equal(pkg.license, "Apache-2.0");
  const architecture = readFileSync(join(root, "docs/ARCHITECTURE.md"), "utf8");
  // Every section a comment cites exists.
  const cited = new Set<string>();
  for (const f of code) {
    for (const m of readFileSync(f, "utf8").matchAll(/ARCHITECTURE §(\d+(?:\.\d+)?)/g)) cited.add(m[1] ?? "");
  }
  const headings = new Set<string>();
  for (const m of architecture.matchAll(/^#{2,3} (\d+(?:\.\d+)?)\. /gm)) headings.add(m[1] ?? "");
  for (const m of architecture.matchAll(/^#{2,3} (\d+\.\d+) /gm)) headings.add(m[1] ?? "");
  for (const m of architecture.matchAll(/^(\d+)\. \*\*/gm)) headings.add(`3.${m[1]}`);
  const missing = [...cited].filter((s) => !headings.has(s));
  assert.deepEqual(missing, [], "sections cited in code but missing from docs/ARCHITECTURE.md");
});
