// Read by `longhaul dev --config longhaul.config.ts` (and `longhaul serve`): longhaul loads a
// TypeScript config itself, so this app needs no build step. `dev` brings the provider
// simulator as provider `sim` and its webhook source, so the config lists only the task types.
import { defineConfig } from "longhaul";
import { signOff, summarize } from "./tasks.ts";

export default defineConfig({
  tasks: [summarize, signOff],
});
