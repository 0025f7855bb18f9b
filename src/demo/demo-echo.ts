import { defineTask } from "../core/task-type.ts";

export interface EchoInput {
  text: string;
  delay_ms?: number;
  fail?: boolean;
}

/** `demo.echo`: one simulator job that returns `{text}` after `delay_ms`, or fails when `fail` is true. */
export const demoEcho = defineTask<EchoInput, { text: string }>(
  "demo.echo",
  async (input, step) =>
    step.job("echo", {
      provider: "sim",
      input: { instruction: "echo", text: input.text, delay_ms: input.delay_ms, fail: input.fail },
    }),
  {
    validate(input) {
      const i = input as Partial<EchoInput> | null;
      if (typeof i?.text !== "string") throw new Error('"text" must be a string');
      if (
        i.delay_ms !== undefined &&
        (!Number.isInteger(i.delay_ms) || i.delay_ms < 0 || i.delay_ms > 3_600_000)
      ) {
        throw new Error('"delay_ms" must be a whole number of milliseconds up to one hour');
      }
      if (i.fail !== undefined && typeof i.fail !== "boolean")
        throw new Error('"fail" must be true or false');
    },
  },
);
