import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { WebSocket } from "ws";
import type { Page, StreamSink } from "./event-streams.ts";

const PING = Buffer.from(": ping\n\n");

/** An SSE response as a stream's sink: the page's frames, as framed once, in one write. */
export function sseSink(res: ServerResponse): StreamSink {
  return {
    write(page: Page, from: number, to: number): boolean {
      const whole = from === 0 && to === page.rows.length;
      return res.write(whole ? page.bytes : page.bytes.subarray(page.starts[from], page.ends[to - 1]));
    },
    ping: () => res.write(PING),
    get bufferedBytes() {
      return res.writableLength;
    },
    onDrain: (fn) => void res.once("drain", fn),
    onClose: (fn) => void res.once("close", fn),
    end: () => void res.end(),
  };
}

/**
 * A WebSocket as a stream's sink: one text message per event, its TaskEvent JSON (the SSE
 * `data`), whose `seq` is where `?last_event_id=` resumes. Push-back is read from the socket
 * under it, as for SSE: `ws` writes each message straight to it.
 */
export function webSocketSink(ws: WebSocket, socket: Socket): StreamSink {
  return {
    write(page: Page, from: number, to: number): boolean {
      for (let i = from; i < to; i++) ws.send(page.data[i]!);
      return !socket.writableNeedDrain;
    },
    ping() {
      ws.ping();
      return !socket.writableNeedDrain;
    },
    get bufferedBytes() {
      return ws.bufferedAmount;
    },
    onDrain: (fn) => void socket.once("drain", fn),
    onClose: (fn) => void ws.once("close", fn),
    // 1001 "going away": the server ends the stream; the client resumes with its last seq.
    end: () => ws.close(1001, "stream ended; resume with last_event_id"),
  };
}
