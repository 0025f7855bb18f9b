import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";

// What the benches that run servers as processes of their own share: starting a child that keeps
// its output, a free loopback port, the arguments of `longhaul serve`, stopping a child, and the
// CPU time a process has used.

/** A bench's children, for killing what is left when it ends. */
export const children = new Set<ChildProcess>();

/** Starts `node args` in `cwd`; its output is kept (the last 8 KiB) for an error message. */
export function startChild(
  cwd: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, args, {
    cwd,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  child.on("exit", () => children.delete(child));
  let out = "";
  const keep = (b: Buffer) => {
    out = (out + b.toString()).slice(-8192);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  return { child, output: () => out };
}

/**
 * A process's name and the CPU time it has used so far, in seconds (user + system): all its
 * threads, and its main thread alone (the one that runs its event loop), from /proc; null
 * where there is none (no /proc, or the process has gone).
 */
export function processCpu(pid: number): { name: string; seconds: number; mainThread: number } | null {
  const all = statCpu(`/proc/${pid}/stat`);
  const main = statCpu(`/proc/${pid}/task/${pid}/stat`);
  if (!all || !main) return null;
  return { name: all.name, seconds: all.seconds, mainThread: main.seconds };
}

function statCpu(path: string): { name: string; seconds: number } | null {
  let stat: string;
  try {
    stat = readFileSync(path, "utf8");
  } catch {
    return null;
  }
  const close = stat.lastIndexOf(")");
  const fields = stat.slice(close + 2).split(" ");
  // utime and stime, fields 14 and 15 of stat(5), in clock ticks (100 a second on Linux).
  return {
    name: stat.slice(stat.indexOf("(") + 1, close),
    seconds: (Number(fields[11]) + Number(fields[12])) / 100,
  };
}

/** A port free on the loopback address right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** `longhaul serve` with a role and a config file, listening on the loopback port given. */
export const serveArgs = (role: string, config: string, port: number): string[] => [
  "serve",
  "--role",
  role,
  "--config",
  config,
  "--port",
  String(port),
  "--host",
  "127.0.0.1",
];

/** Resolves with the child's exit code once it has exited (at once if it has). */
export function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the child has exited. */
export async function stopChild(child: ChildProcess, graceMs = 15_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const done = exited(child);
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await done;
  clearTimeout(timer);
}
