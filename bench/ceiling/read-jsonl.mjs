// The ceiling of bench/batch-merge.ts: a bare process that reads JSON Lines files line by line
// and parses each line, nothing kept. Prints {seconds, lines, maxRssBytes}. No dependency.
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";

const files = process.argv.slice(2);
const started = process.hrtime.bigint();
let lines = 0;
for (const file of files) {
  const rl = createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY });
  for await (const line of rl) {
    if (line.trim() === "") continue;
    JSON.parse(line);
    lines++;
  }
}
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
console.log(JSON.stringify({ seconds, lines, maxRssBytes: process.resourceUsage().maxRSS * 1024 }));
