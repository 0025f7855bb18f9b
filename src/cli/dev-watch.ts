import { type ChildProcess, spawn } from "node:child_process";
import { type FSWatcher, readdirSync, statSync, watch } from "node:fs";
import { basename, dirname, extname, join, relative, resolve, sep } from "node:path";
import { configPath } from "./config.ts";
import { clockTime, wantsColor } from "./dev-companion.ts";
import { DEV_GENERATION_VARIABLE, type DevOptions, type DevReady } from "./dev-options.ts";

// `longhaul dev --watch`: this process watches the files and runs the server as a child
// process, restarting it on the same port and data directory when a file changes. A restart,
// not a fresh `import()` in place: ES modules are cached by URL, so a new import of the config
// would still run the task files it imports as first loaded, and cache-busting every import
// needs a loader of its own (tsx's) and leaks each old module graph. A new process loads
// every file anew, whatever imports it and whichever loader reads it (src/cli/README.md).
// The durable store makes a restart invisible to tasks: the new server resumes them.

/** The files whose change reloads: code and JSON, wherever they sit under the watched folder. */
const WATCHED = new Set([".ts", ".mts", ".cts", ".tsx", ".js", ".mjs", ".cjs", ".json"]);
/** Folders never watched: dependencies, version control, and (below) the data directory. */
const SKIPPED = new Set(["node_modules", ".git", "dist"]);
/** Changes that come together (an editor's save, a checkout) make one reload. */
const SETTLE_MS = 100;
/** How long a stopping server may drain before it is killed. */
const STOP_GRACE_MS = 10_000;

export async function watchDev(o: DevOptions): Promise<void> {
  const config = configPath(o.config);
  const root = config ? dirname(config) : process.cwd();
  const dataDir = resolve(o.dataDir);
  const color = wantsColor(process.stdout);
  const say = (text: string, tone = 36) =>
    process.stdout.write(
      `${color ? `\x1b[${tone}m` : ""}${clockTime(Date.now())}  ${text}${color ? "\x1b[0m" : ""}\n`,
    );

  // The server: this command again, without --watch, told its generation.
  const args = process.argv.slice(2).filter((a) => a !== "--watch");
  let generation = 0;
  let child: ChildProcess | null = null;
  const start = (): ChildProcess => {
    generation++;
    const c = spawn(process.execPath, [...process.execArgv, process.argv[1]!, ...args], {
      env: { ...process.env, [DEV_GENERATION_VARIABLE]: String(generation) },
      stdio: ["inherit", "inherit", "inherit", "ipc"],
      // Its own process group: a terminal's Ctrl-C reaches this process alone, which stops the
      // server once, so the server drains instead of taking a second signal as "exit now".
      detached: true,
    });
    const first = generation === 1;
    c.on("message", (m: DevReady) => {
      if (m?.type === "ready" && !first) say(`reloaded    task types ${m.taskTypes.join(", ")}`, 32);
    });
    c.once("exit", (code, signal) => {
      if (child === c && !stopping) {
        child = null;
        say(`the server stopped (${signal ?? `exit code ${code}`}); save a file to start it again`, 31);
      }
    });
    return c;
  };

  let stopping = false;
  const stop = async (c: ChildProcess | null) => {
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once("exit", r));
    c.kill("SIGTERM");
    const timer = setTimeout(() => c.kill("SIGKILL"), STOP_GRACE_MS);
    await exited;
    clearTimeout(timer);
  };

  /** Loads the config, with every file it imports, in a process of its own; its error if it fails. */
  const check = () =>
    new Promise<string | null>((done) => {
      const probe = spawn(
        process.execPath,
        [...process.execArgv, process.argv[1]!, ...args, "--check-config"],
        {
          stdio: ["ignore", "ignore", "pipe"],
        },
      );
      let err = "";
      probe.stderr!.on("data", (b: Buffer) => {
        err += b.toString("utf8");
      });
      probe.once("exit", (code) => done(code === 0 ? null : err.trim() || `exit code ${code}`));
    });

  let changed = new Set<string>();
  let timer: NodeJS.Timeout | null = null;
  let reloading: Promise<void> | null = null;
  const reload = async () => {
    const files = [...changed].map((f) => shown(f));
    changed = new Set();
    say(`changed     ${files.join(", ")}`);
    const failed = await check();
    if (failed !== null) {
      say(`reload failed; still running the code from before:\n${failed}`, 31);
      return;
    }
    stopping = true;
    await stop(child);
    stopping = false;
    child = start();
  };
  const onChange = (file: string) => {
    changed.add(file);
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      // One reload at a time; changes made during one make the next.
      reloading = (reloading ?? Promise.resolve()).then(reload).finally(() => {
        reloading = null;
      });
    }, SETTLE_MS);
  };

  const watcher = watchTree(root, (dir) => dir === dataDir || SKIPPED.has(basename(dir)), onChange);
  child = start();
  say(
    `watching    ${relative(process.cwd(), root) || "."} (${[...WATCHED].join(" ")}); a change restarts the server`,
  );

  let quitting = false;
  const quit = () => {
    if (quitting) process.exit(1);
    quitting = true;
    watcher.close();
    if (timer) clearTimeout(timer);
    stopping = true;
    void stop(child).then(() => process.exit(0));
  };
  process.on("SIGINT", quit);
  process.on("SIGTERM", quit);
}

/**
 * Watches `root` and the folders under it (but those `skip` names) for changes to the files
 * `WATCHED` names, and folders made later too. One watcher per folder, so a large ignored tree
 * (node_modules) costs nothing.
 */
export function watchTree(
  root: string,
  skip: (dir: string) => boolean,
  onChange: (file: string) => void,
): { close(): void } {
  const watchers = new Map<string, FSWatcher>();
  const add = (dir: string) => {
    if (watchers.has(dir) || skip(dir)) return;
    let w: FSWatcher;
    try {
      w = watch(dir, (_event, name) => {
        if (!name) return;
        const path = join(dir, name.toString());
        if (WATCHED.has(extname(path))) onChange(path);
        else if (isDir(path)) add(path);
      });
    } catch {
      return;
    }
    w.on("error", () => {
      w.close();
      watchers.delete(dir);
    });
    watchers.set(dir, w);
    for (const e of safeReaddir(dir)) if (e.isDirectory()) add(join(dir, e.name));
  };
  add(root.endsWith(sep) ? root.slice(0, -1) : root);
  return {
    close() {
      for (const w of watchers.values()) w.close();
      watchers.clear();
    },
  };
}

/** A path as a reader at this terminal knows it: from the working directory when under it. */
function shown(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel === "" ? "." : rel.startsWith("..") ? path : rel;
}

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function safeReaddir(dir: string) {
  try {
    return readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
}
