// Checked by `npm run typecheck` (tsconfig includes test/): `client.submit<typeof someTask>`
// types the input from the task type, and the untyped form still takes anything.
import { z } from "zod";
import type { LonghaulClient } from "../../src/client/index.ts";
import { defineTask, task } from "../../src/core/task-type.ts";

const summarize = task({
  id: "summarize",
  schema: z.object({ document: z.string(), words: z.coerce.number().optional() }),
  run: async (input) => ({ chars: input.document.length }),
});
const echo = defineTask("echo", async (input: { text: string }) => input.text);
const untyped = task({ id: "untyped", run: async (input) => input });
const annotated = task({ id: "annotated", run: async (input: { n: number }) => input.n + 1 });

export async function typedSubmits(lh: LonghaulClient): Promise<void> {
  await lh.submit<typeof summarize>("summarize", { document: "hello" });
  // The schema's input, before it parses: z.coerce accepts anything for `words`.
  await lh.submit<typeof summarize>("summarize", { document: "hello", words: "12" });
  // @ts-expect-error `document` must be a string
  await lh.submit<typeof summarize>("summarize", { document: 42 });
  // @ts-expect-error `document` is required
  await lh.submit<typeof summarize>("summarize", {});
  await lh.submit<typeof echo>("echo", { text: "hi" });
  // @ts-expect-error `text` is missing
  await lh.submit<typeof echo>("echo", { txt: "hi" });
  await lh.submit<typeof annotated>("annotated", { n: 1 });
  // @ts-expect-error `n` is a number
  await lh.submit<typeof annotated>("annotated", { n: "1" });
  await lh.submit<typeof untyped>("untyped", { anything: true });
  // The untyped forms are unchanged.
  await lh.submit("demo.echo", { text: "hello" });
  await lh.submit<{ text: string }>("demo.echo", { text: "hello" });
  // @ts-expect-error an explicit input type is still checked
  await lh.submit<{ text: string }>("demo.echo", { text: 1 });
}

// The run function's input is the schema's output.
export const parsed = task({
  id: "parsed",
  schema: z.object({ at: z.string().transform((s) => new Date(s)) }),
  run: async (input, { step, log, signal }) => {
    const year: number = input.at.getFullYear();
    log.info("year", { year });
    signal.throwIfAborted();
    // @ts-expect-error the output of the schema is a Date, not a string
    const s: string = input.at;
    return step.run("noop", () => year + s.length);
  },
});
