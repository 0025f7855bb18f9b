import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { CLI_FROM_SOURCE } from "./processes.ts";

const run = promisify(execFile);
const longhaul = (...args: string[]) => run(process.execPath, [...CLI_FROM_SOURCE, ...args]);

test("longhaul --version prints the package's version", async () => {
  const { version } = JSON.parse(readFileSync(join(import.meta.dirname, "..", "package.json"), "utf8"));
  const { stdout } = await longhaul("--version");
  assert.equal(stdout.trim(), version);
});

test("every subcommand's --help prints its usage and exits 0, opening nothing", async () => {
  for (const command of ["dev", "serve", "simulate", "migrate", "tenants", "tasks", "secrets"]) {
    // An unreachable database: a command that went on past --help would fail on it.
    const { stdout } = await run(process.execPath, [...CLI_FROM_SOURCE, command, "--help"], {
      env: { ...process.env, LONGHAUL_DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" },
    });
    assert.match(stdout, new RegExp(`^  longhaul ${command}\\b`, "m"), `${command} --help`);
    const others = stdout
      .split("\n")
      .filter((l) => l.startsWith("  longhaul ") && !l.startsWith(`  longhaul ${command}`));
    assert.deepEqual(others, [], `${command} --help shows only ${command}`);
  }
  const { stdout } = await longhaul("tenants", "create", "--help");
  assert.match(stdout, /longhaul tenants create NAME/);
});

test("longhaul with an unknown command prints the usage to stderr and exits 2", async () => {
  await assert.rejects(longhaul("frobnicate"), (err: { code?: number; stderr?: string }) => {
    assert.equal(err.code, 2);
    assert.match(err.stderr ?? "", /^longhaul: unknown command 'frobnicate'\n/);
    assert.match(err.stderr ?? "", /Usage:/);
    return true;
  });
});

test("longhaul alone prints the help and exits 0", async () => {
  const { stdout } = await longhaul();
  assert.match(stdout, /^Usage: longhaul <command>/m);
  assert.match(stdout, /LONGHAUL_DATABASE_URL/);
});
