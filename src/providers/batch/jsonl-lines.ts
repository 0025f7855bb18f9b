import { createInterface } from "node:readline";
import { Readable } from "node:stream";

/**
 * The lines of a JSON Lines stream with their numbers (from 1), one at a time, so a large
 * result file is never held whole. A blank line (the last newline's, say) is skipped.
 */
export async function* jsonlLines(
  bytes: AsyncIterable<Uint8Array>,
): AsyncIterable<{ line: string; n: number }> {
  const lines = createInterface({ input: Readable.from(bytes), crlfDelay: Number.POSITIVE_INFINITY });
  let n = 0;
  for await (const line of lines) {
    n++;
    if (line.trim() !== "") yield { line, n };
  }
}
