import { useEffect, useRef, useState } from "preact/hooks";
import { openEventStream, type StreamState, type TaskEvent } from "./event-stream.ts";

export type LiveState = StreamState | "polling";

/**
 * Live updates for a view: the tenant's event stream (or one task's), and polling every
 * `pollMs` when the server has no stream. `onEvent` sees each event; `refresh` is what the
 * view calls to reload, at most once per `throttleMs` however many events arrive.
 */
export function useLive(o: {
  apiKey: string;
  taskId?: string | undefined;
  lastEventId?: string | undefined;
  enabled?: boolean;
  onEvent?: (e: TaskEvent) => void;
  refresh: () => void;
  pollMs?: number;
  throttleMs?: number;
}): LiveState {
  const [state, setState] = useState<LiveState>("connecting");
  const latest = useRef(o);
  latest.current = o;
  const enabled = o.enabled ?? true;

  useEffect(() => {
    if (!enabled) return;
    let timer: ReturnType<typeof setTimeout> | null = null;
    let last = 0;
    const throttleMs = o.throttleMs ?? 400;
    const refresh = () => {
      if (timer) return;
      const wait = Math.max(0, last + throttleMs - Date.now());
      timer = setTimeout(() => {
        timer = null;
        last = Date.now();
        latest.current.refresh();
      }, wait);
    };
    let poll: ReturnType<typeof setInterval> | null = null;
    const url = `/v1/events${o.taskId ? `?task_id=${encodeURIComponent(o.taskId)}` : ""}`;
    const stop = openEventStream({
      url,
      apiKey: o.apiKey,
      lastEventId: o.lastEventId,
      onEvent: (e) => {
        latest.current.onEvent?.(e);
        refresh();
      },
      onState: (s) => {
        if (s === "unavailable") {
          setState("polling");
          poll ??= setInterval(() => latest.current.refresh(), o.pollMs ?? 3000);
          return;
        }
        // Anything missed while the stream was down is picked up by one reload on reconnecting.
        if (s === "open") refresh();
        setState(s);
      },
    });
    return () => {
      stop();
      if (timer) clearTimeout(timer);
      if (poll) clearInterval(poll);
    };
  }, [o.apiKey, o.taskId, enabled]);

  return state;
}
