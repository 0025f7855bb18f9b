import { readFileSync } from "node:fs";
import { type Command, CommanderError } from "commander";
import { LonghaulError } from "../core/errors.ts";
import { allCommands, buildProgram, commandPath, OPTION_VARIABLES } from "./program.ts";

/** The installed package's version; package.json sits two folders up from src/cli and dist/cli alike. */
function version(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
  return String(pkg.version);
}

/**
 * A usage error as one line: commander's `error: unknown option '--prot'` and its
 * `(Did you mean --port?)` on the next line become `unknown option '--prot' (did you mean --port?)`.
 */
export function usageLine(text: string): string {
  return text
    .trim()
    .replace(/^error: /, "")
    .replace(/\s*\n\(Did you mean (.*)\)$/s, " (did you mean $1)")
    .replace(/\s*\n\s*/g, " ");
}

// A variable that is set but empty counts as unset (README "Configuration").
for (const name of OPTION_VARIABLES) if (process.env[name] === "") delete process.env[name];

const program = buildProgram(version());
let running: Command = program;
program.hook("preAction", (_root, action) => {
  running = action;
});
for (const cmd of allCommands(program)) {
  // A usage error: one line naming the command, then its usage, on stderr; exit 2 (below).
  cmd
    .exitOverride((err) => {
      running = cmd;
      throw err;
    })
    .configureOutput({
      outputError: (text, write) =>
        write(`${commandPath(cmd)}: ${usageLine(text)}\n\n${cmd.helpInformation()}`),
    });
}

// `longhaul` alone shows the help, as `longhaul --help` does.
const argv = process.argv.length > 2 ? process.argv : [...process.argv, "--help"];
try {
  await program.parseAsync(argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // --help and --version end here with 0; a command without its subcommand printed its help.
    if (err.code === "commander.help" && err.exitCode !== 0) {
      process.stderr.write(`${commandPath(running)}: name a subcommand (see above).\n`);
    }
    process.exit(err.exitCode === 0 ? 0 : 2);
  }
  const where = commandPath(running);
  if (err instanceof LonghaulError) {
    console.error(`${where}: ${err.message} (${err.code})`);
  } else {
    console.error(err);
  }
  process.exit(1);
}
