// `npm run check:package`: builds, packs the tarball npm would publish, and lints that tarball
// with publint (package.json fields, exports, files present) and Are the Types Wrong (the
// declarations each entry resolves to under every module resolution TypeScript users pick).
//
// attw runs with `--profile esm-only`: longhaul is an ES module package (`"type": "module"`,
// `import` only, no CommonJS build), so `require("longhaul")` from CommonJS (node16-cjs) is
// expected to fail, and so are subpaths such as `longhaul/client` under `node10` resolution,
// which predates `exports`; that profile skips those two. The resolutions an ESM package
// serves, node16 from ESM and bundler, must resolve every entry to its declarations.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

const root = join(import.meta.dirname, "..");
const require = createRequire(import.meta.url);
const npm = process.platform === "win32" ? "npm.cmd" : "npm";

function run(cmd, args, opts = {}) {
  console.log(`$ ${[cmd, ...args].join(" ")}`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: "inherit", ...opts });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

/** The file a package's `bin` names (its package.json is found where `require` would look). */
function bin(pkg, name) {
  for (const dir of require.resolve.paths(pkg) ?? []) {
    const manifest = join(dir, pkg, "package.json");
    if (!existsSync(manifest)) continue;
    const field = JSON.parse(readFileSync(manifest, "utf8")).bin;
    return join(dirname(manifest), typeof field === "string" ? field : field[name]);
  }
  throw new Error(`${pkg} is not installed (it is a devDependency: run npm install)`);
}

run(npm, ["run", "build"]);
const out = mkdtempSync(join(tmpdir(), "longhaul-pack-"));
try {
  run(npm, ["pack", "--pack-destination", out, "--ignore-scripts"]);
  const tarball = join(
    out,
    readdirSync(out).find((f) => f.endsWith(".tgz")),
  );
  run(process.execPath, [bin("publint", "publint"), "run", tarball, "--strict"]);
  run(process.execPath, [bin("@arethetypeswrong/cli", "attw"), tarball, "--profile", "esm-only"]);
} finally {
  rmSync(out, { recursive: true, force: true });
}
