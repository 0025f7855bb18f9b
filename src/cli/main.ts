import { readFileSync } from "node:fs";
import { LonghaulError } from "../core/errors.ts";

const usage = `longhaul — long-running, webhook-driven tasks

Usage:
  longhaul dev [--port 8787] [--host 127.0.0.1] [--sim-port 0] [--data-dir .longhaul] [--config file]
                                                                     server, workers, simulator on SQLite
  longhaul serve [--config file] [--role all|api|worker] [--port 8787] [--host 0.0.0.0]
  longhaul simulate [--port 8788] [--secret whsec_…] [--seed 1] [--state-file f]
                    [--duplicate r] [--reorder r] [--drop r] [--fail-create r] [--delay-ms min,max]
  longhaul migrate                                                   apply database migrations
  longhaul tenants create NAME [--max-concurrent-jobs n] [--tasks-per-day n] [--token-budget n]
  longhaul tenants list | rotate-key TENANT_ID | revoke-key TENANT_ID KEY_ID
  longhaul tasks list|show|cancel [TASK_ID] [--tenant ID]            an operator's view of tasks
  longhaul secrets reseal                                            every stored secret under LONGHAUL_SECRET_KEY
  longhaul --version

Environment: LONGHAUL_DATABASE_URL (sqlite:path | postgres://…), LONGHAUL_API_KEY (dev key),
LONGHAUL_SECRET_KEY and LONGHAUL_SECRET_KEYS (encryption of secrets at rest), LONGHAUL_LOG_LEVEL.`;

type Command = (argv: string[]) => Promise<void>;

// Each command's module is loaded when it runs, so a command loads only what it uses (`serve`
// neither the demo tasks nor the simulator; `--version` and `--help` nothing at all).
const commands: Record<string, () => Promise<Command>> = {
  dev: async () => (await import("./dev.ts")).dev,
  serve: async () => (await import("./serve.ts")).serve,
  simulate: async () => (await import("./simulate.ts")).simulate,
  migrate: async () => (await import("./migrate.ts")).migrateCommand,
  tenants: async () => (await import("./tenants.ts")).tenantsCommand,
  tasks: async () => (await import("./tasks.ts")).tasksCommand,
  secrets: async () => (await import("./secrets.ts")).secretsCommand,
};

/** The installed package's version; package.json sits two folders up from src/cli and dist/cli alike. */
function version(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
  return String(pkg.version);
}

/** The usage lines of one command: its entries and their indented continuation lines. */
function usageOf(command: string): string {
  const out: string[] = [];
  let inside = false;
  for (const line of usage.split("\n")) {
    if (line.startsWith("  longhaul "))
      inside = line.startsWith(`  longhaul ${command} `) || line === `  longhaul ${command}`;
    else if (!line.startsWith("    ")) inside = false;
    if (inside) out.push(line);
  }
  return `Usage:\n${out.join("\n")}`;
}

const [name, ...rest] = process.argv.slice(2);
if (name === "--version" || name === "-v" || name === "version") {
  console.log(version());
  process.exit(0);
}
const command = name && Object.hasOwn(commands, name) ? commands[name] : undefined;
if (!command) {
  console.log(usage);
  process.exit(name && name !== "help" && name !== "--help" && name !== "-h" ? 2 : 0);
}
// `longhaul <command> --help` answers before the command parses its options or opens anything.
const beforeDashDash = rest.includes("--") ? rest.slice(0, rest.indexOf("--")) : rest;
if (beforeDashDash.includes("--help") || beforeDashDash.includes("-h")) {
  console.log(usageOf(name as string));
  process.exit(0);
}
try {
  await (await command())(rest);
} catch (err) {
  if (err instanceof LonghaulError) {
    console.error(`longhaul ${name}: ${err.message} (${err.code})`);
  } else if (
    err instanceof Error &&
    (err as NodeJS.ErrnoException).code === "ERR_PARSE_ARGS_UNKNOWN_OPTION"
  ) {
    console.error(`longhaul ${name}: ${err.message}\n\n${usage}`);
  } else {
    console.error(err);
  }
  process.exit(1);
}
