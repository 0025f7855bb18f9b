import { loadClient } from "./load-client.ts";
import type { SinkConnection, SinkMessage, SinkPublisher } from "./sink-publisher.ts";

/**
 * Publishes to NATS JetStream: subject `<target>.<task id>.<event type>`, `Nats-Msg-Id` the event's id, so
 * the stream's duplicate window drops a repeated attempt. A stream must cover the subjects;
 * without one the publish has no responder and the delivery is retried. Plain `nats://` only:
 * the client names the TLS server by the address it dials, here the vetted IP, so a certificate
 * naming the host would not match.
 */
export async function openNats(c: SinkConnection): Promise<SinkPublisher> {
  const { connect } = await loadClient("@nats-io/transport-node", () => import("@nats-io/transport-node"));
  const { jetstream } = await loadClient("@nats-io/jetstream", () => import("@nats-io/jetstream"));
  const user = decodeURIComponent(c.url.username);
  const pass = decodeURIComponent(c.url.password);
  const nc = await connect({
    servers: `${c.address.includes(":") ? `[${c.address}]` : c.address}:${c.port}`,
    ...(user && pass ? { user, pass } : user ? { token: user } : {}),
    // The vetted address only: no reconnect elsewhere, no servers the cluster gossips.
    reconnect: false,
    ignoreClusterUpdates: true,
    timeout: 10_000,
  });
  const js = jetstream(nc);
  let broken = false;
  nc.closed().then(() => {
    broken = true;
  });
  return {
    async publish(m: SinkMessage, timeoutMs: number) {
      await js.publish(`${c.target}.${m.key}.${m.type}`, m.body, {
        msgID: m.id,
        timeout: timeoutMs,
      });
    },
    usable: () => !broken && !nc.isClosed(),
    close: async () => {
      broken = true;
      await nc.close().catch(() => {});
    },
  };
}
