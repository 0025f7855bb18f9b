import { loadClient } from "./load-client.ts";
import type { SinkConnection, SinkMessage, SinkPublisher } from "./sink-publisher.ts";
import { within } from "./sink-publisher.ts";

/**
 * Publishes to a durable RabbitMQ topic exchange (declared if missing) on a confirm channel:
 * routing key the event type (a `task-id` header names the task), persistent, `message_id` the
 * event's id, and the attempt succeeds
 * only when the broker confirms. A message no queue is bound for is confirmed and dropped by
 * RabbitMQ, as for any publisher: bind a queue, or give the exchange an alternate exchange.
 */
export async function openRabbitmq(c: SinkConnection): Promise<SinkPublisher> {
  const amqp = await loadClient("amqplib", () => import("amqplib"));
  const vhost = decodeURIComponent(c.url.pathname.replace(/^\//, "")) || "/";
  const conn = await amqp.connect(
    {
      protocol: c.tls ? "amqps" : "amqp",
      hostname: c.address,
      port: c.port,
      username: decodeURIComponent(c.url.username) || "guest",
      password: decodeURIComponent(c.url.password) || "guest",
      vhost,
    },
    c.tls ? { servername: c.url.hostname } : {},
  );
  let broken = false;
  conn.on("error", () => {
    broken = true;
  });
  conn.on("close", () => {
    broken = true;
  });
  const ch = await conn.createConfirmChannel();
  ch.on("error", () => {
    broken = true;
  });
  ch.on("close", () => {
    broken = true;
  });
  await ch.assertExchange(c.target, "topic", { durable: true });
  return {
    publish(m: SinkMessage, timeoutMs: number) {
      const confirmed = new Promise<void>((resolve, reject) => {
        ch.publish(
          c.target,
          m.type,
          Buffer.from(m.body),
          {
            persistent: true,
            messageId: m.id,
            contentType: "application/json",
            type: m.type,
            headers: { "task-id": m.key, seq: m.seq },
          },
          (err) => (err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve()),
        );
      });
      return within(confirmed, timeoutMs, "the broker's confirm");
    },
    usable: () => !broken,
    close: async () => {
      broken = true;
      await conn.close().catch(() => {});
    },
  };
}
