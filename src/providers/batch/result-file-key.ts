import { createHash } from "node:crypto";

const SAFE = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

/**
 * The blob key a batch's result file is kept under: `providers/<provider>/batches/<batch>/<file>`.
 * A provider's id may hold characters a key may not (Gemini's `batches/123`): those become `_`,
 * and a short hash of the original keeps two ids that differ only there apart.
 */
export function resultFileKey(provider: string, batchId: string, file: string): string {
  return ["providers", segment(provider), "batches", segment(batchId), segment(file)].join("/");
}

function segment(s: string): string {
  if (SAFE.test(s) && s.length <= 120) return s;
  const hash = createHash("sha256").update(s).digest("hex").slice(0, 10);
  return `${s
    .slice(0, 100)
    .replace(/[^A-Za-z0-9._-]/g, "_")
    .replace(/^\./, "_")}-${hash}`;
}
