/** One dispatched server-sent event (the WHATWG event-stream format). */
export interface SseMessage {
  /** The last event id seen on the stream so far, as the spec carries it over. */
  id: string | undefined;
  event: string;
  data: string;
  /** A reconnection delay the server asked for, in milliseconds. */
  retry: number | undefined;
}

/**
 * Incremental `text/event-stream` parser: feed it decoded text in chunks of any size, get the
 * messages completed so far. Lines end with CRLF, LF or CR (a CR at the end of a chunk may be
 * the first half of a CRLF); a blank line dispatches; comments (`:`) are skipped; a message
 * with no data is not dispatched, as in EventSource.
 */
export class SseParser {
  private buffer = "";
  private pendingCr = false;
  private data: string[] = [];
  private event = "";
  private lastId: string | undefined;
  private retry: number | undefined;

  push(chunk: string): SseMessage[] {
    let text = chunk;
    if (this.pendingCr && text.startsWith("\n")) text = text.slice(1);
    this.pendingCr = false;
    this.buffer += text;
    const out: SseMessage[] = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      if (!match) break;
      if (match[0] === "\r" && match.index === this.buffer.length - 1) {
        this.pendingCr = true;
      }
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      const message = this.line(line);
      if (message) out.push(message);
    }
    return out;
  }

  private line(line: string): SseMessage | null {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return null;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.data.push(value);
    else if (field === "event") this.event = value;
    else if (field === "id" && !value.includes("\u0000")) this.lastId = value;
    else if (field === "retry" && /^\d+$/.test(value)) this.retry = Number(value);
    return null;
  }

  private dispatch(): SseMessage | null {
    const data = this.data;
    const event = this.event || "message";
    this.data = [];
    this.event = "";
    if (data.length === 0) return null;
    return { id: this.lastId, event, data: data.join("\n"), retry: this.retry };
  }
}
