import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { waitFor } from "./helpers.ts";

/**
 * `process.execPath` arguments that run `longhaul` from source, through tsx: the repository's
 * tests exercise src/cli, so a stale dist/ never stands in for a change (the published
 * package's compiled CLI is tested by package.test.ts).
 */
export const CLI_FROM_SOURCE: readonly string[] = [
  "--import",
  "tsx",
  join(import.meta.dirname, "..", "src", "cli", "main.ts"),
];

/** The encryption key of stored secrets that every process of a test deployment shares. */
export const TEST_SECRET_KEY = "bG9uZ2hhdWwtdGVzdC1rZXktMzItYnl0ZXMtbG9uZyE=";

/** Runs `longhaul <args>` as its own process, as an operator would (with an encryption key, as `serve` wants). */
export function startCli(args: string[], env: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, [...CLI_FROM_SOURCE, ...args], {
    env: { ...process.env, LONGHAUL_LOG_LEVEL: "warn", LONGHAUL_SECRET_KEY: TEST_SECRET_KEY, ...env },
    stdio: ["ignore", "ignore", "inherit"],
  });
}

export const exited = (c: ChildProcess) =>
  new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r(null) : c.once("exit", r)));

/** Waits until `url` answers 2xx. */
export const answering = (url: string, what: string, timeoutMs = 30_000) =>
  waitFor(async () => (await fetch(url).catch(() => null))?.ok, timeoutMs, what);

/**
 * Writes a config file for `longhaul serve` with the demo task types, the simulator at
 * `simUrl` as provider `sim`, and `publicUrl`. `.mts`, since a temporary folder has no
 * package.json saying the file is a module.
 */
export function demoConfig(
  dir: string,
  name: string,
  o: { simUrl: string; publicUrl: string; secret: string },
): string {
  const file = join(dir, `${name}.config.mts`);
  const demo = pathToFileURL(join(import.meta.dirname, "..", "src", "demo", "index.ts")).href;
  writeFileSync(
    file,
    `import { demoTaskTypes } from ${JSON.stringify(demo)};
export default {
  sources: { sim: { provider: "sim", scheme: "standard-webhooks", secrets: [${JSON.stringify(o.secret)}] } },
  providers: { sim: { base_url: ${JSON.stringify(o.simUrl)} } },
  public_url: ${JSON.stringify(o.publicUrl)},
  taskTypes: demoTaskTypes(${JSON.stringify(dir)}),
};
`,
  );
  return file;
}

/** A tiny JSON client for one node and one API key. */
export function apiOf(base: string, key: string) {
  return async (path: string, body?: unknown): Promise<{ status: number; body: any }> => {
    const r = await fetch(base + path, {
      method: body === undefined ? "GET" : "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : null };
  };
}
