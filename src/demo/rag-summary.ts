import { defineTask } from "../core/task-type.ts";
import type { ChunkSink } from "./chunk-sink.ts";
import { chunkText } from "./chunk-text.ts";

export interface RagSummaryInput {
  document: string;
}

export interface RagSummaryOutput {
  summary: string;
  chunks: number;
  location: string;
}

/**
 * `rag_summary`: the brief's pipeline. A summary from the (simulated) LLM, then the
 * post-processing a worker does once the webhook lands: chunk the document and store the
 * chunks. Each stage is a step, so a crash after the summary never pays for it twice.
 */
export function ragSummary(sink: ChunkSink) {
  return defineTask<RagSummaryInput, RagSummaryOutput>(
    "rag_summary",
    async (input, step, ctx) => {
      const { summary } = await step.job<{ summary: string }>("summarize", {
        provider: "sim",
        input: { instruction: "summarize", document: input.document },
      });
      const chunks = await step.run("chunk", () =>
        chunkText(input.document).map((text, i) => ({ id: `${ctx.taskId}-${i}`, text })),
      );
      const { location } = await step.run("store-chunks", () => sink.put(ctx.taskId, chunks));
      return { summary, chunks: chunks.length, location };
    },
    {
      validate(input) {
        const d = (input as Partial<RagSummaryInput> | null)?.document;
        if (typeof d !== "string" || d.trim().length === 0)
          throw new Error('"document" must be a non-empty string');
      },
    },
  );
}
