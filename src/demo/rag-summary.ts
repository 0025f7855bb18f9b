import type { ArtifactInfo } from "../core/artifact.ts";
import { LonghaulError, NonRetriableError } from "../core/errors.ts";
import { asFileRef, type FileRef } from "../core/file-refs.ts";
import { defineTask, type TaskContext } from "../core/task-type.ts";
import { chunkDocument, type TextChunk } from "../search/chunk-document.ts";
import { chunkPdfPages } from "../search/chunk-pdf.ts";
import { looksLikePdf, pdfPages } from "../search/pdf-pages.ts";
import { reportOf } from "./rag-report.ts";

/** The document inline (small texts), or a reference to it: one of the tenant's files or a URL. */
export type RagSummaryInput = ({ document: string } | { file_id: string } | { url: string }) & {
  /** The title of the PDF report. Default "Summary". */
  title?: string;
};

export interface RagSummaryOutput {
  summary: string;
  chunks: number;
  /** The embedder the chunks were indexed with, for `POST /v1/search`. */
  index: { embedder: string; dimensions: number };
  /** The PDF report (`GET /v1/tasks/:id/artifacts/report.pdf`): title, summary, key points, sources. */
  report: ArtifactInfo;
}

/** How `rag_summary` cuts its document (src/search/chunk-document.ts): characters per chunk and of overlap. */
export interface RagSummaryOptions {
  chunkSize?: number;
  chunkOverlap?: number;
}

// What a path or URL looks like: refused as an inline document, since it would be summarized as text.
const LOOKS_LIKE_LOCATION = /^(?:https?:\/\/|s3:\/\/|gs:\/\/|file:\/\/|\/[^\s]*$)/i;

/** A document as read: text, or a PDF's text page by page (index 0 is page 1). */
type ReadDocument = string | { pages: string[] };

/**
 * Reads a referenced document, streamed: a PDF (by its content type or its `%PDF-` start) as
 * its pages' text, anything else as UTF-8 text. A file that says it is a PDF and is not, or an
 * encrypted or damaged PDF, is DOCUMENT_UNREADABLE, which fails the task at once.
 */
async function readDocument(ref: FileRef, ctx: TaskContext): Promise<ReadDocument> {
  if (!ctx.files) throw new Error("this deployment gives tasks no ctx.files to read the document with");
  const opened = await ctx.files.open(ref);
  const parts: Uint8Array[] = [];
  for await (const chunk of opened.stream) parts.push(chunk);
  const bytes = Buffer.concat(parts);
  const declaredPdf = /^application\/pdf\b/i.test(opened.contentType ?? "");
  if (declaredPdf || looksLikePdf(bytes)) return { pages: await pdfPages(bytes) };
  return new TextDecoder("utf-8").decode(bytes);
}

const isPaged = (d: ReadDocument): d is { pages: string[] } => typeof d !== "string";

/** The input's file reference, beside which a `title` may stand. */
function refOf(input: unknown): FileRef | null {
  if (input === null || typeof input !== "object") return null;
  const { title: _title, ...rest } = input as Record<string, unknown>;
  return asFileRef(rest);
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
      const ref = refOf(input);
      const read: ReadDocument =
        ref === null
          ? (input as { document: string }).document
          : await step.run("read-document", () => readDocument(ref, ctx));
      const document = isPaged(read) ? read.pages.join("\n\n") : read;
      const { summary } = await step.job<{ summary: string }>("summarize", {
        provider: "sim",
        input: { instruction: "summarize", document },
      });
      const sizes = {
        ...(opts.chunkSize === undefined ? {} : { size: opts.chunkSize }),
        ...(opts.chunkOverlap === undefined ? {} : { overlap: opts.chunkOverlap }),
      };
      const chunks: TextChunk[] = await step.run("chunk", () =>
        isPaged(read) ? chunkPdfPages(read.pages, sizes) : chunkDocument(read, sizes),
      );
      const fileId = ref !== null && "file_id" in ref ? ref.file_id : null;
      const source = ref === null ? "inline" : "file_id" in ref ? "file" : "url";
      const indexed = await step.run("store-chunks", () => {
        if (!ctx.index)
          throw new NonRetriableError("this deployment gives tasks no ctx.index to store chunks in");
        return ctx.index.put(chunks.map((c) => ({ ...c, fileId, metadata: { source } })));
      });
      const report = await step.report(
        "report",
        reportOf({ title: input.title ?? "Summary", summary, chunks, taskId: ctx.taskId, fileId }),
      );
      return {
        summary,
        chunks: chunks.length,
        index: { embedder: indexed.embedder, dimensions: indexed.dimensions },
        report,
      };
    },
    {
      validate(input) {
        const title = (input as { title?: unknown } | null)?.title;
        if (
          title !== undefined &&
          (typeof title !== "string" || title.trim().length === 0 || title.length > 200)
        )
          throw new LonghaulError(
            "VALIDATION_FAILED",
            '"title" must be a non-empty string of at most 200 characters.',
            {
              param: "input.title",
            },
          );
        if (refOf(input)) return;
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
