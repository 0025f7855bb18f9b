import { LonghaulError, nonRetriable } from "../core/errors.ts";

/** What `%PDF-` looks like in bytes: every PDF starts with it (within its first 1 024 bytes). */
const PDF_MAGIC = Buffer.from("%PDF-", "latin1");

/** Whether `bytes` are a PDF by their first bytes, whatever type they were uploaded as. */
export function looksLikePdf(bytes: Uint8Array): boolean {
  return Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 1024)).includes(PDF_MAGIC);
}

export type UnreadableReason = "not_pdf" | "encrypted" | "damaged";

/** DOCUMENT_UNREADABLE, final for its step: the same bytes would fail the same way again. */
export function documentUnreadable(
  reason: UnreadableReason,
  message: string,
  cause?: unknown,
): LonghaulError {
  return nonRetriable(
    new LonghaulError("DOCUMENT_UNREADABLE", message, {
      details: { reason },
      ...(cause === undefined ? {} : { cause }),
    }),
  );
}

/**
 * The text of each page of a PDF, in page order (index 0 is page 1), extracted by pdf.js (as
 * `unpdf` ships it, which runs in Node without a worker or anything fetched). Not a PDF, an
 * encrypted PDF (a user password, which a task has no way to know) or one pdf.js cannot parse
 * is DOCUMENT_UNREADABLE with `details.reason` `not_pdf`, `encrypted` or `damaged`.
 */
export async function pdfPages(bytes: Uint8Array): Promise<string[]> {
  if (!looksLikePdf(bytes))
    throw documentUnreadable("not_pdf", "The document is not a PDF: its bytes do not start with %PDF-.");
  // pdf.js takes ownership of the buffer it is given (it may detach it): hand it a copy.
  const data = new Uint8Array(bytes);
  // Loaded on first use: pdf.js is megabytes of code that a process reading no PDF never needs.
  const { getDocumentProxy } = await import("unpdf");
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    pdf = await getDocumentProxy(data, { verbosity: 0, isEvalSupported: false });
  } catch (err) {
    const name = (err as { name?: string } | null)?.name;
    if (name === "PasswordException")
      throw documentUnreadable(
        "encrypted",
        "The PDF is encrypted with a password; upload it without one to have it read.",
        err,
      );
    throw documentUnreadable(
      "damaged",
      `The PDF cannot be read: ${(err as Error)?.message ?? String(err)}.`,
      err,
    );
  }
  try {
    const pages: string[] = [];
    for (let n = 1; n <= pdf.numPages; n++) {
      const page = await pdf.getPage(n);
      const content = await page.getTextContent();
      let text = "";
      for (const item of content.items) {
        if (!("str" in item)) continue;
        text += item.str;
        if (item.hasEOL) text += "\n";
      }
      pages.push(text);
    }
    return pages;
  } catch (err) {
    throw documentUnreadable(
      "damaged",
      `The PDF cannot be read: ${(err as Error)?.message ?? String(err)}.`,
      err,
    );
  } finally {
    await pdf.destroy();
  }
}
