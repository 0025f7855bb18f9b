import { appendFileSync, existsSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";

/** A bounded closed-loop load generator: `total` requests, `concurrency` at a time, loopback only. */
export interface LoadResult {
  requests: number;
  seconds: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
}

export async function load(
  total: number,
  concurrency: number,
  send: (i: number) => Promise<boolean>,
): Promise<LoadResult> {
  const latencies: number[] = [];
  let next = 0;
  let errors = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = next++;
        const t = performance.now();
        const ok = await send(i).catch(() => false);
        latencies.push(performance.now() - t);
        if (!ok) errors++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return { requests: total, seconds, perSecond: total / seconds, p50Ms: at(0.5), p99Ms: at(0.99), errors };
}

export function table(rows: Record<string, string | number>[]): string {
  const cols = Object.keys(rows[0] ?? {});
  const line = (cells: (string | number)[]) => `| ${cells.join(" | ")} |`;
  return [
    line(cols),
    line(cols.map(() => "---")),
    ...rows.map((r) => line(cols.map((c) => r[c] ?? ""))),
  ].join("\n");
}

export const fmt = (n: number, digits = 1) => n.toFixed(digits);

/** The machine a result was measured on, for bench/RESULTS.md: CPU, count, node, load average. */
export function machineLine(): string {
  const cpu = cpus();
  const load = loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");
  return `${cpu[0]?.model.trim() ?? "unknown CPU"} × ${cpu.length}, node ${process.version}, ${process.platform}, load average ${load} at the end`;
}

/** The command that reproduces a run: the npm script with the BENCH_ variables that were set. */
export function commandLine(script: string, vars: readonly string[]): string {
  const set = vars.filter((v) => process.env[v]).map((v) => `${v}=${process.env[v]}`);
  return [...set, `npm run ${script}`].join(" ");
}

/**
 * Prints a run's table and appends it to bench/RESULTS.md under `title`, with the date, the
 * machine and the command that reproduces it.
 */
export function recordResult(title: string, machine: string, command: string, text: string): void {
  console.log(`\n${machine}\n\n${text}`);
  const results = fileURLToPath(new URL("./RESULTS.md", import.meta.url));
  if (!existsSync(results)) {
    writeFileSync(
      results,
      "# Bench results\n\nEntries appended by the benches that record themselves, newest last. Machines here are\nnoisy: compare the ratios measured within one entry, not absolute numbers across entries.\n",
    );
  }
  const at = new Date().toISOString().slice(0, 16).replace("T", " ");
  appendFileSync(
    results,
    `\n## ${at} UTC — ${title}\n\nMachine: ${machine}\n\nCommand: \`${command}\`\n\n${text}\n`,
  );
  console.log("\nappended to bench/RESULTS.md");
}
