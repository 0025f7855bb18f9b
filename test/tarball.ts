import { type ChildProcess, execFile, spawn } from "node:child_process";
import {
  cpSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join, relative } from "node:path";
import type { TestContext } from "node:test";
import { promisify } from "node:util";
import { waitFor } from "./helpers.ts";

// The package as people install it, shared by the tests of the published package
// (package.test.ts), the examples (examples.test.ts) and the deployment (deploy.test.ts):
// `npm pack` of a copy of the working tree, `npm install` of that tarball into a scratch app,
// and children run under plain `node`, without tsx and without this repository's settings.

export const ROOT = join(import.meta.dirname, "..");
const run = promisify(execFile);
/** Left out of the copy that is packed: installed or built things, local data. */
const notCopied = new Set(["node_modules", "dist", ".git", ".longhaul", ".bench-data"]);

/** The environment of a child: no npm settings of the running script, no longhaul settings, no tsx. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.toLowerCase().startsWith("npm_") && !k.startsWith("LONGHAUL_") && k !== "NODE_OPTIONS") env[k] = v;
  }
  return { ...env, ...extra };
}

export const npm = (args: string[], cwd: string, timeout = 900_000) =>
  run("npm", args, { cwd, env: cleanEnv(), timeout, maxBuffer: 64 * 1024 * 1024 });

/** `node <args>` in `cwd` under a clean environment; resolves with its output once it exits 0. */
export const node = (args: string[], cwd: string, env: Record<string, string> = {}, timeout = 60_000) =>
  run(process.execPath, args, { cwd, env: cleanEnv(env), timeout, maxBuffer: 64 * 1024 * 1024 });

/** The version in this repository's package.json. */
export const packageVersion = (): string =>
  JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version;

/**
 * Packs a copy of the working tree into `dir` and returns the tarball's path. A copy, so
 * building it (`prepare` builds dist/ and web/dist) never touches this tree's dist/ or web/dist
 * while other tests read them, and a stale build here can never be what is tested.
 */
export async function packTarball(dir: string): Promise<string> {
  const repo = join(dir, "repo");
  cpSync(ROOT, repo, {
    recursive: true,
    filter: (src) => {
      const rel = relative(ROOT, src);
      return !rel.split(/[\\/]/).some((part) => notCopied.has(part)) && !/\.db(-wal|-shm)?$/.test(rel);
    },
  });
  symlinkSync(realpathSync(join(ROOT, "node_modules")), join(repo, "node_modules"), "dir");
  const out = join(dir, "out");
  mkdirSync(out);
  await npm(["pack", "--pack-destination", out], repo);
  const tgz = readdirSync(out).find((f) => f.endsWith(".tgz"));
  if (!tgz) throw new Error("npm pack wrote no tarball");
  return join(out, tgz);
}

/** The tarball's size, for a diagnostic line. */
export const tarballKb = (tarball: string) => `${(statSync(tarball).size / 1024).toFixed(0)} kB`;

/**
 * `npm install <args>` (or `npm ci <args>`) in `cwd`. The install reaches the registry for the tarball's own
 * dependencies: when it fails outside CI (no network), the test is skipped loudly and this
 * returns false; under CI=true the failure fails the test.
 */
export async function installOrSkip(
  t: TestContext,
  cwd: string,
  args: string[],
  file: string,
  command: "install" | "ci" = "install",
): Promise<boolean> {
  try {
    await npm([command, ...args, "--no-audit", "--no-fund"], cwd);
    return true;
  } catch (err) {
    if (process.env.CI === "true") throw err;
    const why = (err as { stderr?: string }).stderr?.trim().split("\n").slice(-5).join("\n") ?? String(err);
    console.error(
      `\n!!! ${file} SKIPPED: npm install of the packed tarball failed (registry unreachable?).\n!!! It fails under CI=true.\n${why}\n`,
    );
    t.skip("npm install of the tarball failed; see stderr");
    return false;
  }
}

/**
 * A scratch app in `dir`: `files` written, then the tarball and `deps` installed (see
 * installOrSkip). False when the test was skipped.
 */
export async function scratchApp(
  t: TestContext,
  dir: string,
  files: Record<string, string>,
  tarball: string,
  deps: string[] = [],
  file = "a test of the packed package",
): Promise<boolean> {
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return installOrSkip(t, dir, [tarball, ...deps], file);
}

/** A long-running child under plain node: its output so far, and a stop that answers its exit code. */
export interface Running {
  child: ChildProcess;
  output(): string;
  /** Sends `signal` (SIGTERM) and resolves with the exit code (null if killed), SIGKILL after 15 s. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export function startNode(args: string[], cwd: string, env: Record<string, string> = {}): Running {
  const child = spawn(process.execPath, args, {
    cwd,
    env: cleanEnv(env),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (c: Buffer) => {
    out += c.toString("utf8");
  });
  child.stderr!.on("data", (c: Buffer) => {
    out += c.toString("utf8");
  });
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    child,
    output: () => out,
    async stop(signal = "SIGTERM") {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      const code = await exit;
      clearTimeout(timer);
      return code;
    },
  };
}

/** The development key `longhaul dev` prints, once it has; throws if the process ended first. */
export function devKeyOf(dev: Running): Promise<string> {
  return waitFor(
    () => {
      if (dev.child.exitCode !== null)
        throw new Error(`longhaul dev exited ${dev.child.exitCode}: ${dev.output()}`);
      return /API key\s+(lh_\S+)/.exec(dev.output())?.[1];
    },
    30_000,
    "longhaul dev to print its key",
  );
}

/** JSON calls to a deployment's API with a tenant key: GET without a body, POST with one. */
export function jsonApi(base: string, key: string) {
  return async (path: string, body?: unknown): Promise<{ status: number; body: any }> => {
    const r = await fetch(base + path, {
      method: body === undefined ? "GET" : "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
}
