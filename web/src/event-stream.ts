import { SseParser, type TaskEvent as WireTaskEvent } from "../../src/client/index.ts";

/** A task event as `GET /v1/events` sends it in each message's data. */
export type TaskEvent = WireTaskEvent<Record<string, unknown> | null>;

/**
 * `open`: receiving; `retrying`: the connection dropped and will be made again, resuming from
 * the last event id; `unavailable`: the server has no event stream (the caller polls instead);
 * `unauthorized`: the key was refused.
 */
export type StreamState = "connecting" | "open" | "retrying" | "unavailable" | "unauthorized";

export interface StreamOptions {
  url: string;
  apiKey: string;
  /** Resume after this event id (the `Last-Event-ID` header). */
  lastEventId?: string | undefined;
  onEvent(e: TaskEvent): void;
  onState(s: StreamState): void;
}

const MIN_DELAY_MS = 1000;
const MAX_DELAY_MS = 15_000;

/**
 * Reads `GET /v1/events` with `fetch`, so the API key travels in the Authorization header and
 * never in a URL (EventSource cannot send headers). Reconnects with backoff and sends
 * `Last-Event-ID`, so no event is missed across a drop. Returns a function that stops it.
 */
export function openEventStream(o: StreamOptions): () => void {
  const abort = new AbortController();
  let lastId = o.lastEventId;
  let delay = MIN_DELAY_MS;
  let stopped = false;

  const connect = async (): Promise<"retry" | "stop"> => {
    const headers: Record<string, string> = {
      authorization: `Bearer ${o.apiKey}`,
      accept: "text/event-stream",
    };
    if (lastId !== undefined) headers["last-event-id"] = lastId;
    const res = await fetch(o.url, { headers, signal: abort.signal, cache: "no-store" });
    if (res.status === 401) {
      o.onState("unauthorized");
      return "stop";
    }
    if (res.status === 404 || res.status === 405 || res.status === 501) {
      await res.body?.cancel();
      o.onState("unavailable");
      return "stop";
    }
    const type = res.headers.get("content-type") ?? "";
    if (!res.ok || !res.body || !type.includes("text/event-stream")) {
      await res.body?.cancel();
      return "retry";
    }
    o.onState("open");
    delay = MIN_DELAY_MS;
    const parser = new SseParser();
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return "retry";
      for (const m of parser.push(value)) {
        const event = parse(m.data);
        if (event) o.onEvent(event);
      }
      // The id of the last complete event, with or without data: where a reconnect resumes.
      if (parser.lastEventId !== "") lastId = parser.lastEventId;
      if (parser.retry !== null) delay = Math.max(MIN_DELAY_MS, parser.retry);
    }
  };

  const run = async () => {
    o.onState("connecting");
    while (!stopped) {
      let next: "retry" | "stop" = "retry";
      try {
        next = await connect();
      } catch {
        // A dropped connection or a network error: retried below, like any other drop.
      }
      if (stopped || next === "stop") return;
      o.onState("retrying");
      await new Promise((r) => setTimeout(r, delay * (0.75 + Math.random() / 2)));
      delay = Math.min(delay * 2, MAX_DELAY_MS);
    }
  };
  void run();

  return () => {
    stopped = true;
    abort.abort();
  };
}

function parse(data: string): TaskEvent | null {
  try {
    const v = JSON.parse(data) as TaskEvent;
    return typeof v === "object" && v !== null && typeof v.type === "string" ? v : null;
  } catch {
    return null;
  }
}
