import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import { tempDir } from "./helpers.ts";

// `import "longhaul"` is what a file of task definitions does, in every process that defines
// tasks (a worker, a script, a test): it must not load the server. Fastify, pg and
// better-sqlite3 are CommonJS, so the child lists require's cache once it has imported.

const tmp = tempDir("longhaul-front-door-");
after(() => tmp.cleanup());
const ROOT = resolve(import.meta.dirname, "..");

function loadedBy(entry: string, then = ""): string[] {
  const script = join(tmp.dir, "probe.mjs");
  writeFileSync(
    script,
    `import { createRequire } from "node:module";
const m = await import(${JSON.stringify(pathToFileURL(join(ROOT, entry)).href)});
${then}
for (const file of Object.keys(createRequire(import.meta.url).cache)) console.log(file);
`,
  );
  const r = spawnSync(process.execPath, ["--import", "tsx", script], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, LONGHAUL_LOG_LEVEL: "silent" },
  });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split("\n").filter(Boolean);
}

const SERVER = /[\\/]node_modules[\\/](fastify|@fastify[\\/][^\\/]+|pg|pg-pool|better-sqlite3)[\\/]/;

test('import "longhaul" loads none of fastify, pg and better-sqlite3', () => {
  const server = loadedBy(
    "src/index.ts",
    "if (typeof m.task !== 'function') throw new Error('no task');",
  ).filter((f) => SERVER.test(f));
  assert.deepEqual(server, []);
});

test('the deprecated createLonghaul of "longhaul" loads the server when it is called', () => {
  const loaded = loadedBy(
    "src/index.ts",
    `const lh = await m.createLonghaul({ databaseUrl: "sqlite::memory:", role: "api" });
await lh.close();`,
  );
  assert.ok(
    loaded.some((f) => /[\\/]node_modules[\\/]fastify[\\/]/.test(f)),
    "fastify was loaded",
  );
});
