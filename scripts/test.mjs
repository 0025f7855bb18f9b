// Finds every *.test.ts under test/ and src/ and runs them with Node's test runner through tsx.
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

function find(dir, out) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) find(p, out);
    else if (name.endsWith(".test.ts")) out.push(p);
  }
  return out;
}
const only = process.argv.slice(2);
const files = only.length > 0 ? only : [...find("test", []), ...find("src", [])].sort();
const r = spawnSync(process.execPath, ["--import", "tsx", "--test", "--test-concurrency=2", ...files], {
  stdio: "inherit",
});
process.exit(r.status ?? 1);
