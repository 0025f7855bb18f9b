import type { ChildProcess } from "node:child_process";
import { createServer } from "node:net";

// What the benches that run servers as processes of their own share: a free loopback port, the
// arguments of `longhaul serve`, and stopping a child.

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
