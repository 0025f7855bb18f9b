/** The message brokers an event sink publishes to (src/sinks). Kafka, SQS and Pub/Sub come later. */
export const sinkKinds = ["nats", "rabbitmq", "redis"] as const;

export type SinkKind = (typeof sinkKinds)[number];

/**
 * The URL schemes each kind accepts: the plain one and its TLS form. NATS has no TLS form yet:
 * its client names the TLS server by the address it dials, and sinks dial the vetted address.
 */
export const sinkSchemes: Readonly<Record<SinkKind, readonly string[]>> = {
  nats: ["nats:"],
  rabbitmq: ["amqp:", "amqps:"],
  redis: ["redis:", "rediss:"],
};

/** The ports a scheme uses when the URL names none. */
export const defaultPorts: Readonly<Record<string, number>> = {
  "nats:": 4222,
  "amqp:": 5672,
  "amqps:": 5671,
  "redis:": 6379,
  "rediss:": 6379,
};

/** Subject tokens, exchange and stream names: printable, no spaces or wildcards, at most 200. */
export const SINK_TARGET_PATTERN = /^[A-Za-z0-9_\-.:]{1,200}$/;
