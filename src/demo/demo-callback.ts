import { defineTask } from "../core/task-type.ts";
import { optionalTimeout } from "./timeout-input.ts";

/**
 * `demo.callback`: waits on a signed callback URL (shown as `callback_url` on the waiting
 * step); its output is the JSON posted to that URL.
 */
export const demoCallback = defineTask<{ timeout_s?: number }, unknown>(
  "demo.callback",
  async (input, step) => step.callback("callback", optionalTimeout(input)),
  { validate: (input) => void optionalTimeout(input as { timeout_s?: number }) },
);
