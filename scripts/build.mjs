// Builds the library into dist/: `tsc -p tsconfig.build.json` (JS and declarations mirroring
// src/, `.ts` import specifiers rewritten to `.js`), then copies the files src reads at runtime
// next to the modules that read them (`new URL("./migrations/", import.meta.url)`): every file
// under src whose extension is in `runtimeExtensions`, wherever it lives. Last, it bundles the
// dependencies in `vendored` into dist/vendor/ and points dist's imports of them there.
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, extname, join, relative, sep } from "node:path";
import { build } from "esbuild";

const root = join(import.meta.dirname, "..");
const src = join(root, "src");
const dist = join(root, "dist");
const runtimeExtensions = new Set([".sql", ".ttf"]);

// Dependencies shipped as hundreds of small ES modules: Node resolves, reads and links each file
// on its own, which costs a start of `longhaul serve` ~130 ms for typebox (374 files) against
// ~10 ms for the same code in one file. They are bundled into dist/vendor/ (one entry per
// specifier, shared code in common chunks, so `typebox/compile` still loads only when first
// used), and dist's imports of these specifiers point there. Declarations keep importing the
// packages, which stay dependencies: their types, and the same code for anyone importing them.
// Only pure-JavaScript packages whose values carry no identity across copies belong here
// (typebox's schemas are plain objects; jose's errors are checked by longhaul's code alone).
const vendored = {
  typebox: "typebox",
  "typebox-compile": "typebox/compile",
  "typebox-value": "typebox/value",
  jose: "jose",
};

rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
const r = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json")], { stdio: "inherit" });
if (r.status !== 0) process.exit(r.status ?? 1);

function* walk(dir) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* walk(p);
    else yield p;
  }
}
let copied = 0;
for (const file of walk(src)) {
  if (!runtimeExtensions.has(extname(file))) continue;
  const out = join(dist, relative(src, file));
  mkdirSync(dirname(out), { recursive: true });
  cpSync(file, out);
  copied++;
}

const vendor = join(dist, "vendor");
await build({
  entryPoints: vendored,
  absWorkingDir: root,
  outdir: vendor,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  chunkNames: "chunk-[hash]",
  legalComments: "inline",
  logLevel: "warning",
});
// Each vendored package's license travels with its bundle.
for (const name of new Set(Object.values(vendored).map((spec) => spec.split("/")[0]))) {
  const dir = join(root, "node_modules", name);
  const license = readdirSync(dir).find((f) => /^licen[cs]e/i.test(f));
  if (!license) throw new Error(`${name} ships no license file to copy beside its bundle`);
  cpSync(join(dir, license), join(vendor, `${name}.LICENSE`));
}
const byName = Object.fromEntries(Object.entries(vendored).map(([name, spec]) => [spec, name]));
const specifier = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)"([^"./][^"]*)"/g;
let rewritten = 0;
for (const file of walk(dist)) {
  if (!file.endsWith(".js") || file.startsWith(vendor + sep)) continue;
  const text = readFileSync(file, "utf8");
  const out = text.replace(specifier, (whole, lead, spec) => {
    const name = byName[spec];
    if (!name) return whole;
    const path = relative(dirname(file), join(vendor, `${name}.js`))
      .split(sep)
      .join("/");
    return `${lead}"${path.startsWith(".") ? path : `./${path}`}"`;
  });
  // Any other mention of a vendored package (an import written some other way) would load it
  // from node_modules after all: the build stops instead.
  const left = Object.keys(byName).find((spec) => out.includes(`"${spec}"`) || out.includes(`'${spec}'`));
  if (left) throw new Error(`${relative(root, file)} still names "${left}", which dist/vendor/ bundles`);
  if (out !== text) {
    writeFileSync(file, out);
    rewritten++;
  }
}
console.log(
  `dist/ built: ${copied} runtime files copied beside the compiled modules, ` +
    `${Object.keys(vendored).length} vendored entries imported by ${rewritten} modules`,
);
