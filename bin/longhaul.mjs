#!/usr/bin/env node
// The `longhaul` command: runs the compiled CLI (dist/, built by `npm run build`, which
// `npm install` runs in a clone through `prepare`). tsx is loaded only to read a `.ts` config.
import { existsSync } from "node:fs";

const main = new URL("../dist/cli/main.js", import.meta.url);
if (!existsSync(main)) {
  console.error("longhaul: dist/cli/main.js is missing; run `npm run build` in the package folder.");
  process.exit(1);
}
await import(main.href);
