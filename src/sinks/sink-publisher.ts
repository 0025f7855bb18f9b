/**
 * One message of a task event, as every broker receives it. `id` is the event's id (its seq in
 * the event log, as `/v1/events` numbers it): the same on every attempt and replay, so brokers
 * that dedupe (NATS `Nats-Msg-Id`, the Redis idempotency key) drop a repeat, and a subscriber
 * can too. `key` is the task id: the subject token or field that keeps one task's events
 * together (and, for Kafka, SQS FIFO and Pub/Sub, the partition key, message group and
 * ordering key they will use).
 */
export interface SinkMessage {
  id: string;
  key: string;
  type: string;
  seq: number;
  /** The JSON body: the event as `/v1/events` shows it, with its `id` (`sinkBody`). */
  body: string;
}

/** The event as JSON, `{id, seq, task_id, type, data, created_at}`: `/v1/events`' shape and its id. */
export function sinkBody(e: {
  seq: number;
  taskId: string;
  type: string;
  data: unknown;
  createdAt: number;
}): string {
  return JSON.stringify({
    id: String(e.seq),
    seq: e.seq,
    task_id: e.taskId,
    type: e.type,
    data: e.data,
    created_at: new Date(e.createdAt).toISOString(),
  });
}

/** A connection to one sink's broker. `publish` resolves once the broker has taken the message. */
export interface SinkPublisher {
  publish(m: SinkMessage, timeoutMs: number): Promise<void>;
  /** False once the connection broke: the pool opens a new one for the next attempt. */
  usable(): boolean;
  close(): Promise<void>;
}

/** Where to connect: the vetted address (never the name again), and what the URL says besides. */
export interface SinkConnection {
  url: URL;
  /** The address the SSRF check vetted; the host name stays for TLS. */
  address: string;
  port: number;
  tls: boolean;
  /** The subject prefix, exchange or stream. */
  target: string;
}

/** Rejects after `ms` unless `p` settles first. */
export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
