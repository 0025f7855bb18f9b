import { loadClient } from "./load-client.ts";
import type { SinkConnection, SinkMessage, SinkPublisher } from "./sink-publisher.ts";
import { within } from "./sink-publisher.ts";

/** How long a delivery's idempotency key is kept: past the retry schedule (about three days). */
export const REDIS_DEDUPE_TTL_S = 7 * 24 * 3600;

/**
 * SET NX of the idempotency key and XADD in one script: Redis runs it atomically, so the entry
 * is added exactly when the key was not there. (A MULTI cannot make the XADD depend on the
 * SET's answer.) The key's hash tag is the stream's name, so both keys share a cluster slot.
 */
const ADD_ONCE = `if redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[1]) then
  return redis.call('XADD', KEYS[1], '*', 'id', ARGV[2], 'task_id', ARGV[3], 'type', ARGV[4], 'seq', ARGV[5], 'data', ARGV[6])
end
return false`;

/** The idempotency key of one delivery on one stream. */
export const redisDedupeKey = (stream: string, deliveryId: string) =>
  `{${stream}}:longhaul:delivered:${deliveryId}`;

/** Appends to a Redis stream: `XADD <stream> * id <delivery> task_id <task> type seq data`, once per delivery. */
export async function openRedis(c: SinkConnection): Promise<SinkPublisher> {
  const { createClient } = await loadClient("@redis/client", () => import("@redis/client"));
  const db = Number(c.url.pathname.replace(/^\//, "") || 0);
  const client = createClient({
    socket: {
      host: c.address,
      port: c.port,
      // A broken connection fails its attempts; the pool opens a new one (vetted again).
      reconnectStrategy: false,
      connectTimeout: 10_000,
      ...(c.tls ? { tls: true as const, servername: c.url.hostname } : {}),
    },
    ...(c.url.username ? { username: decodeURIComponent(c.url.username) } : {}),
    ...(c.url.password ? { password: decodeURIComponent(c.url.password) } : {}),
    ...(Number.isInteger(db) && db > 0 ? { database: db } : {}),
  });
  let broken = false;
  client.on("error", () => {
    broken = true;
  });
  client.on("end", () => {
    broken = true;
  });
  await client.connect();
  return {
    async publish(m: SinkMessage, timeoutMs: number) {
      await within(
        client.eval(ADD_ONCE, {
          keys: [c.target, redisDedupeKey(c.target, m.id)],
          arguments: [String(REDIS_DEDUPE_TTL_S), m.id, m.key, m.type, String(m.seq), m.body],
        }),
        timeoutMs,
        "XADD",
      );
    },
    usable: () => !broken && client.isReady,
    close: async () => {
      broken = true;
      await client.close().catch(() => {});
    },
  };
}
