// Merging a batch's result files into items (src/providers/batch/result-merge.ts), each side in
// a process of its own:
//
// 1. the ceiling: bench/ceiling/read-jsonl.mjs, a bare process that reads the output and error
//    files line by line and JSON.parses each line, keeping nothing;
// 2. longhaul: this file run with `--merge`, a child that reads the input file for the order of
//    the requests (`inputOrder`), then merges the output and error files (`mergeResults`,
//    OpenAI's line format) into one item per request with its usage, as `fetchResult` does
//    from the blob store.
//
// The files are written once into a temporary folder: BENCH_BATCH_REQUESTS (default 50000)
// requests, 95% answered in the output file (a Responses API body of about 400 bytes each) and
// 5% failed in the error file, in an order other than the input's. BENCH_RUNS (default 3)
// rounds, the two alternating. Per run: wall time from the first read to the last item, and the
// process's peak RSS (`process.resourceUsage().maxRSS`). The table goes to stdout and is
// appended to bench/RESULTS.md; the folder is removed at the end.
import { createReadStream, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { children, exited, startChild } from "./children.ts";
import { commandLine, fmt, machineLine, recordResult, table } from "./load.ts";

const REQUESTS = Number(process.env.BENCH_BATCH_REQUESTS ?? 50_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const root = fileURLToPath(new URL("..", import.meta.url));
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

/** The child: merges the files in `dir` and prints {seconds, items, maxRssBytes}. */
async function merge(dir: string): Promise<void> {
  const { inputOrder, mergeResults } = await import("../src/providers/batch/result-merge.ts");
  const { readOpenAIResultLine } = await import("../src/providers/batch/openai-result-line.ts");
  const started = process.hrtime.bigint();
  const order = await inputOrder("input file", createReadStream(join(dir, "input.jsonl")));
  const { items, usage } = await mergeResults(order, [
    { name: "output file", bytes: createReadStream(join(dir, "output.jsonl")), read: readOpenAIResultLine },
    { name: "error file", bytes: createReadStream(join(dir, "error.jsonl")), read: readOpenAIResultLine },
  ]);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const failed = items.filter((i) => i.status === "failed").length;
  console.log(
    JSON.stringify({
      seconds,
      items: items.length,
      failed,
      tokens: usage.total_tokens,
      maxRssBytes: process.resourceUsage().maxRSS * 1024,
    }),
  );
}

/** Writes input.jsonl, output.jsonl (95%) and error.jsonl (5%) for REQUESTS requests. */
function writeFiles(dir: string): number {
  const input: string[] = [];
  const output: string[] = [];
  const errors: string[] = [];
  const text = "The quarterly figures show steady growth in every region, led by the north. ".repeat(3);
  for (let i = 0; i < REQUESTS; i++) {
    const custom_id = `request-${i}`;
    input.push(
      JSON.stringify({
        custom_id,
        method: "POST",
        url: "/v1/responses",
        body: { model: "gpt-5-mini", input: `Summarize document ${i}.` },
      }),
    );
    if (i % 20 === 19) {
      errors.push(
        JSON.stringify({
          id: `batch_req_${i}`,
          custom_id,
          response: {
            status_code: 500,
            request_id: `req_${i}`,
            body: {
              error: { message: "The server had an error.", type: "server_error", code: "server_error" },
            },
          },
          error: null,
        }),
      );
    } else {
      const body = {
        id: `resp_${i}`,
        object: "response",
        status: "completed",
        model: "gpt-5-mini",
        output_text: text,
        usage: { input_tokens: 12, output_tokens: 40, total_tokens: 52 },
      };
      output.push(
        JSON.stringify({
          id: `batch_req_${i}`,
          custom_id,
          response: { status_code: 200, request_id: `req_${i}`, body },
          error: null,
        }),
      );
    }
  }
  // A batch answers in the order its requests finish, not the input's.
  output.reverse();
  writeFileSync(join(dir, "input.jsonl"), `${input.join("\n")}\n`);
  writeFileSync(join(dir, "output.jsonl"), `${output.join("\n")}\n`);
  writeFileSync(join(dir, "error.jsonl"), `${errors.join("\n")}\n`);
  return statSync(join(dir, "output.jsonl")).size + statSync(join(dir, "error.jsonl")).size;
}

interface Run {
  seconds: number;
  maxRssBytes: number;
}

async function run(args: string[]): Promise<Run> {
  const { child, output } = startChild(root, args);
  const code = await exited(child);
  const last = output().trim().split("\n").at(-1) ?? "";
  if (code !== 0 || !last.startsWith("{")) throw new Error(`the run failed (${code}):\n${output()}`);
  return JSON.parse(last) as Run;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
};
const mib = (b: number) => fmt(b / 1048576, 1);

async function main(dir: string): Promise<void> {
  const bytes = writeFiles(dir);
  const runs: Record<"merge" | "ceiling", Run[]> = { merge: [], ceiling: [] };
  const args = {
    ceiling: [here("./ceiling/read-jsonl.mjs"), join(dir, "output.jsonl"), join(dir, "error.jsonl")],
    merge: ["--import", "tsx", here("./batch-merge.ts"), "--merge", dir],
  };
  for (let i = 0; i < RUNS; i++) {
    const order = i % 2 === 0 ? (["ceiling", "merge"] as const) : (["merge", "ceiling"] as const);
    for (const kind of order) {
      const r = await run(args[kind]);
      runs[kind].push(r);
      console.error(
        `round ${i + 1} ${kind}: ${fmt(r.seconds * 1000, 0)} ms, peak RSS ${mib(r.maxRssBytes)} MiB`,
      );
    }
  }
  const time = (k: "merge" | "ceiling") => median(runs[k].map((r) => r.seconds));
  const peak = (k: "merge" | "ceiling") => median(runs[k].map((r) => r.maxRssBytes));
  const row = (what: string, k: "merge" | "ceiling") => ({
    what,
    "time ms (median)": fmt(time(k) * 1000, 0),
    rounds: runs[k].map((r) => fmt(r.seconds * 1000, 0)).join(", "),
    "time vs bare": fmt(time(k) / time("ceiling"), 2),
    "peak RSS MiB (median)": mib(peak(k)),
    "RSS vs bare": fmt(peak(k) / peak("ceiling"), 2),
  });
  const text = [
    `${REQUESTS} requests: output file ${REQUESTS - Math.floor(REQUESTS / 20)} lines (Responses API bodies, in reverse order), error file ${Math.floor(REQUESTS / 20)} lines, ${mib(bytes)} MiB together; each run a process of its own; ${RUNS} rounds, alternating; time = first read to last item; peak RSS = the process's maxRSS (node itself included; the longhaul child runs from source under tsx, whose loader counts in it, and holds every item, as the job's output must, while the bare read keeps nothing)`,
    "",
    table([
      row("bare: read + JSON.parse each line of the output and error files", "ceiling"),
      row("longhaul: input order, then merge output + error into items with usage", "merge"),
    ]),
  ].join("\n");
  recordResult(
    "batch result merge",
    machineLine(),
    commandLine("bench:batch-merge", ["BENCH_BATCH_REQUESTS", "BENCH_RUNS"]),
    text,
  );
}

const mergeAt = process.argv.indexOf("--merge");
if (mergeAt >= 0) {
  await merge(process.argv[mergeAt + 1]!);
} else {
  const dir = mkdtempSync(join(tmpdir(), "longhaul-bench-batch-merge-"));
  const cleanup = () => {
    for (const child of children) child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  };
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      cleanup();
      process.exit(130);
    });
  }
  try {
    await main(dir);
  } finally {
    cleanup();
  }
}
