import assert from "node:assert/strict";
import { connect as tcpConnect } from "node:net";
import { test } from "node:test";

/** The brokers the event-sink tests publish to, as CI starts them (.ci/run). */
export const brokers = {
  nats: { host: "127.0.0.1", port: 4222 },
  rabbitmq: { host: "127.0.0.1", port: 5672 },
  redis: { host: "127.0.0.1", port: 6379 },
} as const;

/** Null when something accepts TCP connections at host:port, else why not. */
export function tcpUnreachable(host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const s = tcpConnect({ host, port, timeout: 3000 });
    s.once("connect", () => {
      s.destroy();
      resolve(null);
    });
    s.once("timeout", () => {
      s.destroy();
      resolve(`no answer from ${host}:${port}`);
    });
    s.once("error", (err) => resolve(`${host}:${port}: ${err.message}`));
  });
}

/**
 * As `pgAvailableOrReport`: for each unreachable broker, a failing test under CI=true, a loud
 * skip elsewhere. True when every broker answers and the real tests should be registered.
 */
export function brokersAvailableOrReport(unreachable: Record<string, string | null>, what: string): boolean {
  const down = Object.entries(unreachable).filter(([, why]) => why !== null);
  if (down.length === 0) return true;
  const why = down.map(([name, reason]) => `${name} is unreachable (${reason})`).join("; ");
  if (process.env.CI === "true") {
    test(`${what}: NATS, RabbitMQ and Redis are reachable (required when CI=true)`, () => {
      assert.fail(`${why}. Start them (.ci/run checks them).`);
    });
  } else {
    console.warn(`\n!!! ${what} were SKIPPED: ${why}.\n!!! They fail instead when CI=true.\n`);
    test(what, { skip: why }, () => {});
  }
  return false;
}
