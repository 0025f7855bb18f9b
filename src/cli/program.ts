import { Command, InvalidArgumentError, Option } from "commander";

// The `longhaul` command line: every command, argument and option with its default and its
// variable, described once here for the parser and for `--help`. Each command's module is
// loaded only when it runs, so a command loads what it uses (`serve` neither the demo tasks nor
// the simulator; `--version` and `--help` nothing at all; test/startup-lazy.test.ts).

/** The variables options read (commander's `.env`); one that is set but empty counts as unset. */
export const OPTION_VARIABLES = [
  "LONGHAUL_PORT",
  "LONGHAUL_HOST",
  "LONGHAUL_DATABASE_URL",
  "LONGHAUL_LOG_LEVEL",
  "LONGHAUL_SIM_SECRET",
] as const;

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

/** A parser of whole numbers from `min` to `max`, for an option or an argument. */
export function wholeNumber(min: number, max: number) {
  return (text: string): number => {
    const n = Number(text);
    if (text.trim() === "" || !Number.isInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`Expected a whole number from ${min} to ${max}.`);
    }
    return n;
  };
}

const port = wholeNumber(0, 65535);

function rate(text: string): number {
  const n = Number(text);
  if (text.trim() === "" || !(n >= 0 && n <= 1))
    throw new InvalidArgumentError("Expected a rate from 0 to 1.");
  return n;
}

function delayRange(text: string): [number, number] {
  const [a, b, more] = text.split(",").map((s) => (s.trim() === "" ? Number.NaN : Number(s)));
  if (more !== undefined || !(a! >= 0 && b! >= a!)) {
    throw new InvalidArgumentError("Expected min,max in milliseconds, min at most max.");
  }
  return [a!, b!];
}

const configOption = () =>
  new Option(
    "--config <file>",
    "the config file (env: LONGHAUL_CONFIG; default: the first of longhaul.config.{ts,mts,js,mjs,json} in the working directory)",
  );
const databaseOption = (fallback = "sqlite:.longhaul/longhaul.db") =>
  new Option("--database-url <url>", `the store: sqlite:path or postgres://… (default: ${fallback})`).env(
    "LONGHAUL_DATABASE_URL",
  );
const portOption = (fallback: number) =>
  new Option("--port <port>", "the port to listen on (PORT is read when LONGHAUL_PORT is not set)")
    .env("LONGHAUL_PORT")
    .default(fallback)
    .argParser(port);
const hostOption = (fallback: string) =>
  new Option("--host <address>", "the address to listen on").env("LONGHAUL_HOST").default(fallback);
const logLevelOption = (fallback: string) =>
  new Option("--log-level <level>", "the log level")
    .env("LONGHAUL_LOG_LEVEL")
    .default(fallback)
    .choices(LOG_LEVELS);
const jsonOption = () => new Option("--json", "print JSON, for scripts");
const tenantOption = () =>
  new Option("--tenant <id>", "the tenant").default("tn_dev", "tn_dev, the development tenant");

/** A command's action: the function `load` imports, called with the command's arguments and options. */
function lazy(load: () => Promise<(...args: any[]) => Promise<void>>): (...args: unknown[]) => Promise<void> {
  return async (...args) => {
    const fn = await load();
    // commander passes the arguments, then the options, then the command: the command's
    // options with its parents' (`--database-url` given before a subcommand) and where each came from.
    const cmd = args.at(-1) as Command;
    const positionals = args.slice(0, -2);
    await fn(...positionals, { ...cmd.optsWithGlobals(), sources: sourcesOf(cmd) });
  };
}

/** Where each option's value came from: `cli`, `env` or `default`. */
function sourcesOf(cmd: Command): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (let c: Command | null = cmd; c; c = c.parent) {
    for (const o of c.options) {
      const key = o.attributeName();
      out[key] ??= c.getOptionValueSource(key);
    }
  }
  return out;
}

/** The help's closing section: examples, each a line that starts `  longhaul <command>`, and a note. */
const examples = (lines: string[], note?: string) =>
  `\nExamples:\n${lines.map((l) => `  ${l}`).join("\n")}\n${note ? `\n${note}\n` : ""}`;

const ENVIRONMENT = `
Environment:
  LONGHAUL_DATABASE_URL   the store (sqlite:path | postgres://…); default sqlite:.longhaul/longhaul.db
  LONGHAUL_CONFIG         the config file, when --config is not given
  LONGHAUL_PORT, LONGHAUL_HOST   where dev and serve listen (PORT is read too)
  LONGHAUL_LOG_LEVEL      the log level (default info; warn under dev)
  LONGHAUL_API_KEY        the development tenant's key under dev
  LONGHAUL_SECRET_KEY, LONGHAUL_SECRET_KEYS   the keys that encrypt secrets at rest
  LONGHAUL_ADMIN_KEY      the key of the admin API and /metrics
  LONGHAUL_PUBLIC_URL, LONGHAUL_<BLOCK>_<KEY>  config keys (README "Configuration")
  NO_COLOR                no colours in dev's output
`;

/** The whole command tree; `version` is the package's. */
export function buildProgram(version: string): Command {
  const program = new Command("longhaul")
    .description("Long-running, webhook-driven tasks.")
    .usage("<command> [options]")
    .version(version, "-v, --version", "print the version")
    .helpOption("-h, --help", "show the help of a command")
    .addHelpText("after", ENVIRONMENT)
    .showSuggestionAfterError(true);
  program.command("version", { hidden: true }).action(() => {
    console.log(version);
  });

  program
    .command("dev")
    .description("API, workers, simulator and dashboard in one process, on SQLite, with a development tenant")
    .addOption(portOption(8787))
    .addOption(hostOption("127.0.0.1"))
    .addOption(
      new Option("--sim-port <port>", "the simulator's port (0: any free one)").default(0).argParser(port),
    )
    .addOption(
      new Option("--data-dir <dir>", "where the database and the simulator's state live").default(
        ".longhaul",
      ),
    )
    .addOption(configOption())
    .addOption(databaseOption("sqlite:<data-dir>/longhaul.db"))
    .addOption(logLevelOption("warn"))
    .addOption(
      new Option("--watch", "restart when the config or a file beside it changes (.ts, .js, .mjs, …)"),
    )
    .addOption(new Option("--check-config").hideHelp())
    .addHelpText(
      "after",
      examples(
        [
          "longhaul dev",
          "longhaul dev --config longhaul.config.ts --watch",
          "longhaul dev --port 9000 --data-dir /tmp/longhaul",
        ],
        "LONGHAUL_API_KEY sets the development key; NO_COLOR turns colours off.",
      ),
    )
    .action(lazy(async () => (await import("./dev.ts")).devCommand));

  program
    .command("serve")
    .description("the production server: the store of --database-url, the task types of the config")
    .addOption(configOption())
    .addOption(
      new Option("--role <role>", "what this node runs: the API, the workers, or both")
        .choices(["all", "api", "worker"])
        .default("all"),
    )
    .addOption(portOption(8787))
    .addOption(hostOption("0.0.0.0"))
    .addOption(databaseOption())
    .addOption(logLevelOption("info"))
    .addHelpText(
      "after",
      examples(
        [
          "longhaul serve --config longhaul.config.js",
          "longhaul serve --role worker --database-url postgres://longhaul@db/longhaul",
        ],
        "Needs LONGHAUL_SECRET_KEY unless the config lists tokens.keys.",
      ),
    )
    .action(lazy(async () => (await import("./serve.ts")).serve));

  program
    .command("simulate")
    .description("the provider simulator alone: an asynchronous LLM API that signs its webhooks")
    .addOption(new Option("--port <port>", "the port to listen on").default(8788).argParser(port))
    .addOption(new Option("--host <address>", "the address to listen on").default("127.0.0.1"))
    .addOption(
      new Option("--secret <whsec>", "the webhook signing secret (default: a new one, printed)").env(
        "LONGHAUL_SIM_SECRET",
      ),
    )
    .addOption(
      new Option("--seed <n>", "the seed of its randomness").default(1).argParser(wholeNumber(0, 2 ** 31)),
    )
    .addOption(new Option("--state-file <file>", "keep its jobs in this file across restarts"))
    .addOption(new Option("--duplicate <rate>", "the share of webhooks sent twice, 0 to 1").argParser(rate))
    .addOption(new Option("--reorder <rate>", "the share of webhooks sent out of order").argParser(rate))
    .addOption(new Option("--drop <rate>", "the share of webhooks never sent").argParser(rate))
    .addOption(new Option("--fail-create <rate>", "the share of job creations refused").argParser(rate))
    .addOption(
      new Option(
        "--throttle-create <rate>",
        "the share of job creations answered 429 with Retry-After",
      ).argParser(rate),
    )
    .addOption(
      new Option("--retry-after <s>", "the Retry-After of those 429s, in seconds (default 7)").argParser(
        wholeNumber(0, 86_400),
      ),
    )
    .addOption(
      new Option("--delay-ms <min,max>", "the delay of each webhook, in milliseconds").argParser(delayRange),
    )
    .addHelpText("after", examples(["longhaul simulate --port 8788 --duplicate 0.1 --reorder 0.1"]))
    .action(lazy(async () => (await import("./simulate.ts")).simulate));

  const migrate = program
    .command("migrate")
    .description("apply the database migrations; `migrate status` shows applied and pending")
    .addOption(databaseOption())
    .addOption(new Option("--dry-run", "list the pending migrations and change nothing"))
    .addOption(jsonOption())
    .addHelpText(
      "after",
      examples(["longhaul migrate", "longhaul migrate --dry-run", "longhaul migrate status --json"]),
    )
    // `migrate` runs on its own and has a subcommand: a word after it that is not `status` is
    // an unknown subcommand, as under `tasks`, rather than an extra argument.
    .argument("[command]")
    .usage("[options] [command]")
    .action(async (word: string | undefined, opts: unknown, cmd: Command) => {
      if (word !== undefined) unknownSubcommand(cmd, word);
      await lazy(async () => (await import("./migrate.ts")).migrateCommand)(opts, cmd);
    });
  migrate
    .command("status")
    .description("the migrations applied and pending; changes nothing")
    .addOption(databaseOption())
    .addOption(jsonOption())
    .action(lazy(async () => (await import("./migrate.ts")).migrateStatus));

  const tenants = program
    .command("tenants")
    .description("tenants and their API keys, on the store of --database-url")
    .addHelpText(
      "after",
      examples([
        "longhaul tenants create acme --tasks-per-day 1000",
        "longhaul tenants list --json",
        "longhaul tenants rotate-key tn_01…",
        "longhaul tenants revoke-key tn_01… key_01…",
      ]),
    );
  const quota = (flags: string, what: string) =>
    new Option(flags, what).argParser(wholeNumber(0, Number.MAX_SAFE_INTEGER));
  tenants
    .command("create")
    .description("a new tenant; prints its API key once")
    .usage("NAME [options]")
    .argument("<NAME>", "the tenant's name")
    .addOption(quota("--max-concurrent-jobs <n>", "jobs it may have running at once"))
    .addOption(quota("--tasks-per-day <n>", "tasks it may submit a day"))
    .addOption(quota("--token-budget <n>", "tokens it may use a period"))
    .addOption(new Option("--budget-policy <policy>", "past the budget: park its jobs or reject them"))
    .addOption(new Option("--budget-period <period>", "what the token budget is counted over"))
    .addOption(quota("--submit-rate <n>", "submissions it may make a second"))
    .addOption(databaseOption())
    .addHelpText("after", examples(["longhaul tenants create acme --max-concurrent-jobs 5"]))
    .action(lazy(async () => (await import("./tenants.ts")).tenantsCreate));
  tenants
    .command("list")
    .description("every tenant with its usage and quotas; changes nothing")
    .addOption(jsonOption())
    .addOption(databaseOption())
    .action(lazy(async () => (await import("./tenants.ts")).tenantsList));
  tenants
    .command("rotate-key")
    .description("adds a new key; the old one works until revoked")
    .argument("<TENANT_ID>")
    .addOption(databaseOption())
    .action(lazy(async () => (await import("./tenants.ts")).tenantsRotateKey));
  tenants
    .command("revoke-key")
    .description("revokes one key of a tenant")
    .argument("<TENANT_ID>")
    .argument("<KEY_ID>")
    .addOption(databaseOption())
    .action(lazy(async () => (await import("./tenants.ts")).tenantsRevokeKey));

  const tasks = program
    .command("tasks")
    .description("an operator's view of a tenant's tasks")
    .addHelpText(
      "after",
      examples([
        "longhaul tasks list --status failed",
        "longhaul tasks list --json",
        "longhaul tasks show t_01…",
        "longhaul tasks cancel t_01… --tenant tn_01…",
        "longhaul tasks rerun t_01… --tenant tn_01… --from start",
      ]),
    );
  tasks
    .command("list")
    .description("the tenant's tasks, newest first; changes nothing")
    .addOption(tenantOption())
    .addOption(new Option("--status <status>", "only tasks in this status"))
    .addOption(new Option("--type <type>", "only tasks of this type"))
    .addOption(new Option("--limit <n>", "at most this many").default(20).argParser(wholeNumber(1, 1000)))
    .addOption(jsonOption())
    .addOption(databaseOption())
    .action(lazy(async () => (await import("./tasks.ts")).tasksList));
  tasks
    .command("show")
    .description("one task as the API answers it (GET /v1/tasks/:id); changes nothing")
    .argument("<TASK_ID>")
    .addOption(tenantOption())
    .addOption(configOption())
    .addOption(databaseOption())
    .action(lazy(async () => (await import("./tasks.ts")).tasksShow));
  tasks
    .command("cancel")
    .description("cancels a task and its live jobs")
    .argument("<TASK_ID>")
    .addOption(tenantOption())
    .addOption(databaseOption())
    .action(lazy(async () => (await import("./tasks.ts")).tasksCancel));
  tasks
    .command("rerun")
    .description("re-runs a failed, canceled or timed-out task as a new task; prints the new task's id")
    .argument("<TASK_ID>")
    .addOption(tenantOption())
    .addOption(
      new Option("--from <point>", "failed_step: reuse the steps that succeeded; start: run them all again")
        .choices(["failed_step", "start"])
        .default("failed_step"),
    )
    .addOption(new Option("--client-request-id <id>", "the same id again prints the same re-run"))
    .addOption(jsonOption())
    .addOption(databaseOption())
    .action(lazy(async () => (await import("./tasks.ts")).tasksRerun));

  const secrets = program
    .command("secrets")
    .description("stored secrets")
    .addHelpText(
      "after",
      examples(["longhaul secrets reseal"], "LONGHAUL_SECRET_KEY names the key to reseal under."),
    );
  secrets
    .command("reseal")
    .description("every stored secret under LONGHAUL_SECRET_KEY; run once every node writes with it")
    .addOption(databaseOption())
    .action(lazy(async () => (await import("./secrets.ts")).secretsReseal));

  return program;
}

/** The usage error of a word that names no subcommand of `cmd`, with the closest one if it is close. */
function unknownSubcommand(cmd: Command, word: string): never {
  const names = cmd.commands.map((c) => c.name());
  const close = names.filter((n) => editDistance(n, word) <= Math.max(1, Math.floor(n.length / 3)));
  cmd.error(
    `error: unknown command '${word}'${close.length ? `\n(Did you mean ${close.join(", ")}?)` : ""}`,
    {
      code: "commander.unknownCommand",
    },
  );
}

function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length]!;
}

/** Every command of the tree, the program first. */
export function allCommands(root: Command): Command[] {
  return [root, ...root.commands.flatMap((c) => allCommands(c))];
}

/** `longhaul tasks show`: the words that name a command. */
export function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(" ");
}
