import { LonghaulError, NonRetriableError } from "../core/errors.ts";
import { asFileRef, type FileRef } from "../core/file-refs.ts";
import { defineTask, type TaskContext } from "../core/task-type.ts";
import { chunkDocument } from "../search/chunk-document.ts";

/** The document inline (small texts), or a reference to it: one of the tenant's files or a URL. */
export type RagSummaryInput = { document: string } | { file_id: string } | { url: string };

export interface RagSummaryOutput {
  summary: string;
  chunks: number;
  /** The embedder the chunks were indexed with, for `POST /v1/search`. */
  index: { embedder: string; dimensions: number };
}

/** How `rag_summary` cuts its document (src/search/chunk-document.ts): characters per chunk and of overlap. */
export interface RagSummaryOptions {
  chunkSize?: number;
  chunkOverlap?: number;
}

// What a path or URL looks like: refused as an inline document, since it would be summarized as text.
const LOOKS_LIKE_LOCATION = /^(?:https?:\/\/|s3:\/\/|gs:\/\/|file:\/\/|\/[^\s]*$)/i;

/** Reads a referenced document, streamed, as UTF-8 text. */
async function readDocument(ref: FileRef, ctx: TaskContext): Promise<string> {
  if (!ctx.files) throw new Error("this deployment gives tasks no ctx.files to read the document with");
  const opened = await ctx.files.open(ref);
  const decoder = new TextDecoder("utf-8");
  let text = "";
  for await (const chunk of opened.stream) text += decoder.decode(chunk, { stream: true });
  return text + decoder.decode();
}

/**
 * `rag_summary`: the brief's pipeline. The document is read (streamed, when it is a file
 * reference), a summary comes from the (simulated) LLM, then the post-processing a worker does
 * once the webhook lands: chunk the document along its headings and paragraphs and index the
 * chunks (`ctx.index`, searchable with `POST /v1/search`), with the file they came from. Each
 * stage is a step, so a crash after the summary never pays for it twice, and indexing again
 * replaces the task's chunks rather than adding to them.
 */
export function ragSummary(opts: RagSummaryOptions = {}) {
  return defineTask<RagSummaryInput, RagSummaryOutput>(
    "rag_summary",
    async (input, step, ctx) => {
      const ref = asFileRef(input);
      const document =
        ref === null
          ? (input as { document: string }).document
          : await step.run("read-document", () => readDocument(ref, ctx));
      const { summary } = await step.job<{ summary: string }>("summarize", {
        provider: "sim",
        input: { instruction: "summarize", document },
      });
      const chunks = await step.run("chunk", () =>
        chunkDocument(document, {
          ...(opts.chunkSize === undefined ? {} : { size: opts.chunkSize }),
          ...(opts.chunkOverlap === undefined ? {} : { overlap: opts.chunkOverlap }),
        }),
      );
      const fileId = ref !== null && "file_id" in ref ? ref.file_id : null;
      const source = ref === null ? "inline" : "file_id" in ref ? "file" : "url";
      const indexed = await step.run("store-chunks", () => {
        if (!ctx.index)
          throw new NonRetriableError("this deployment gives tasks no ctx.index to store chunks in");
        return ctx.index.put(chunks.map((c) => ({ ...c, fileId, metadata: { source } })));
      });
      return {
        summary,
        chunks: chunks.length,
        index: { embedder: indexed.embedder, dimensions: indexed.dimensions },
      };
    },
    {
      validate(input) {
        if (asFileRef(input)) return;
        const d = (input as { document?: unknown } | null)?.document;
        if (typeof d !== "string" || d.trim().length === 0)
          throw new Error('give "document" (a non-empty string), {"file_id": …} or {"url": …}');
        if (LOOKS_LIKE_LOCATION.test(d.trim()))
          throw new LonghaulError(
            "VALIDATION_FAILED",
            '"document" is the text itself; to summarize a file at a URL or path, pass {"url": …} (or upload it and pass {"file_id": …}).',
            { param: "input.url" },
          );
      },
    },
  );
}
