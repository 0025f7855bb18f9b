/**
 * One message of a task event, as every broker receives it. `id` is the delivery's id: the
 * same on every attempt and replay, so brokers that dedupe (NATS `Nats-Msg-Id`, the Redis
 * idempotency key) drop a repeat. `key` is the task id: the subject token, routing key or
 * field that keeps one task's events together (and, for Kafka, SQS FIFO and Pub/Sub, the
 * partition key, message group and ordering key they will use).
 */
export interface SinkMessage {
  id: string;
  key: string;
  type: string;
  seq: number;
  /** The JSON body, the same bytes an outbound webhook of the event carries. */
  body: string;
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
