// Builds the library into dist/: `tsc -p tsconfig.build.json` (JS and declarations mirroring
// src/, `.ts` import specifiers rewritten to `.js`), then copies the files src reads at runtime
// next to the modules that read them (`new URL("./migrations/", import.meta.url)`): every file
// under src whose extension is in `runtimeExtensions`, wherever it lives.
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, extname, join, relative } from "node:path";

const root = join(import.meta.dirname, "..");
const src = join(root, "src");
const dist = join(root, "dist");
const runtimeExtensions = new Set([".sql"]);

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
console.log(`dist/ built: ${copied} runtime files copied beside the compiled modules`);
