/** One dispatched Server-Sent Event. */
export interface SseMessage {
  /** The `event` field, or `message` when the event named none. */
  event: string;
  data: string;
  /** The stream's last event id when this event was dispatched (ids carry over to events without one). */
  id: string;
}

/**
 * An incremental parser of the `text/event-stream` format (WHATWG HTML, "Server-sent
 * events"): lines end in CRLF, LF or CR, even when a chunk splits the CRLF; `data` lines
 * join with LF; a line starting with `:` is a comment; `id` holding NUL is ignored; `retry`
 * takes only digits; an event is dispatched at a blank line, and one with no data is not.
 * An `id` counts only once its event is complete (a blank line), even an event with no
 * data, so a stream cut inside an event resumes before it. An event cut off by the end of
 * the stream is dropped, as the format requires.
 */
export class SseParser {
  /** The reconnection delay the server asked for, in milliseconds. */
  retry: number | null = null;
  /** The id to resume after: set by each completed event (`Last-Event-ID` on reconnect). */
  lastEventId = "";
  private idBuffer = "";
  private readonly decoder = new TextDecoder("utf-8");
  private buffer = "";
  private sawCR = false;
  private started = false;
  private data = "";
  private hasData = false;
  private eventType = "";

  /** Feeds bytes (or already decoded text) and returns the events they complete. */
  push(chunk: Uint8Array | string): SseMessage[] {
    let text = typeof chunk === "string" ? chunk : this.decoder.decode(chunk, { stream: true });
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    const out: SseMessage[] = [];
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const ch = text.charCodeAt(i);
      if (ch !== 10 && ch !== 13) continue;
      if (ch === 10 && this.sawCR && i === 0 && this.buffer === "") {
        // The LF of a CRLF whose CR ended the previous chunk.
        this.sawCR = false;
        start = 1;
        continue;
      }
      this.line(this.buffer + text.slice(start, i), out);
      this.buffer = "";
      if (ch === 13 && text.charCodeAt(i + 1) === 10) i++;
      this.sawCR = ch === 13 && i === text.length - 1;
      start = i + 1;
    }
    if (start < text.length) {
      this.buffer += text.slice(start);
      this.sawCR = false;
    }
    return out;
  }

  private line(line: string, out: SseMessage[]): void {
    if (line === "") {
      this.lastEventId = this.idBuffer;
      if (this.hasData) {
        out.push({ event: this.eventType || "message", data: this.data.slice(0, -1), id: this.lastEventId });
      }
      this.data = "";
      this.hasData = false;
      this.eventType = "";
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "event":
        this.eventType = value;
        break;
      case "data":
        this.data += `${value}\n`;
        this.hasData = true;
        break;
      case "id":
        if (!value.includes("\u0000")) this.idBuffer = value;
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.retry = Number(value);
        break;
    }
  }
}
