import http from "node:http";
import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";

// Local stand-ins for where approval messages go: an HTTP receiver (webhooks, Slack's
// incoming webhooks, a WeCom group robot's API) and an SMTP sink.

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * An HTTP receiver on loopback that keeps every request. `answer` decides each answer; the
 * default is 200 with `{"errcode":0,"errmsg":"ok"}`, what a WeCom robot answers when it took
 * the message (and which Slack's and a plain webhook's senders read as a 2xx).
 */
export async function startReceiver(
  answer: (r: Received, n: number) => { status: number; body?: string } = () => ({
    status: 200,
    body: '{"errcode":0,"errmsg":"ok"}',
  }),
) {
  const hits: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const r = { path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
      hits.push(r);
      const a = answer(r, hits.filter((h) => h.path === r.path).length);
      res.writeHead(a.status, { "content-type": "application/json" });
      res.end(a.body ?? "");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export interface Mail {
  from: string;
  to: string[];
  raw: string;
}

/** An SMTP server on loopback that accepts every message without authentication or TLS. */
export async function startSmtpSink(opts: { refuse?: (to: string) => boolean } = {}) {
  const mails: Mail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onRcptTo(address, _session, callback) {
      if (opts.refuse?.(address.address)) {
        const err = new Error("mailbox unavailable") as Error & { responseCode: number };
        err.responseCode = 550;
        callback(err);
        return;
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString("utf8"),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    mails,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A MIME part's text with quoted-printable undone: what a reader of the message sees. */
export function decodeQuotedPrintable(s: string): string {
  const bytes = s
    .replace(/=\r?\n/g, "")
    .replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(Number.parseInt(h, 16)));
  return Buffer.from(bytes, "latin1").toString("utf8");
}
