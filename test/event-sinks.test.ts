import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import net, { type AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { type JetStreamManager, jetstreamManager } from "@nats-io/jetstream";
import { type NatsConnection, connect as natsConnect } from "@nats-io/transport-node";
import { createClient } from "@redis/client";
import amqp from "amqplib";
import Database from "better-sqlite3";
import { LonghaulClient } from "../src/client/index.ts";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { defineTask } from "../src/core/task-type.ts";
import { outboundSettings } from "../src/outbound/settings.ts";
import { openNats } from "../src/sinks/nats-publisher.ts";
import { openRedis, redisDedupeKey } from "../src/sinks/redis-publisher.ts";
import { SinkPool } from "../src/sinks/sink-pool.ts";
import { createEventSink } from "../src/usecases/create-event-sink.ts";
import { brokers, brokersAvailableOrReport, tcpUnreachable } from "./broker-env.ts";
import { tempDir, waitFor } from "./helpers.ts";
import { type Stack, startStack } from "./stack.ts";

const twoSteps = defineTask("sinks.steps", async (_input: unknown, step) => {
  await step.run("a", () => 1);
  await step.run("b", () => 2);
  return { ok: true };
});

const unreachable = {
  nats: await tcpUnreachable(brokers.nats.host, brokers.nats.port),
  rabbitmq: await tcpUnreachable(brokers.rabbitmq.host, brokers.rabbitmq.port),
  redis: await tcpUnreachable(brokers.redis.host, brokers.redis.port),
};

/** A stand-in for a broker that goes down and comes back: refuses while down, forwards to Redis when up. */
async function startRedisStandIn() {
  let up = false;
  const server = net.createServer((socket) => {
    if (!up) {
      socket.destroy();
      return;
    }
    const upstream = net.connect(brokers.redis.port, brokers.redis.host);
    socket.pipe(upstream).pipe(socket);
    const end = () => {
      socket.destroy();
      upstream.destroy();
    };
    socket.on("error", end);
    upstream.on("error", end);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as AddressInfo).port,
    setUp: (v: boolean) => {
      up = v;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const SECRET_KEY = randomBytes(32).toString("base64");
const tag = () => `lh_${randomBytes(5).toString("hex")}`;

if (brokersAvailableOrReport(unreachable, "event sink tests against NATS, RabbitMQ and Redis")) {
  describe("event sinks (NATS JetStream, RabbitMQ, Redis Streams)", () => {
    let stack: Stack;
    const tmp = tempDir();
    const dbPath = join(tmp.dir, "sinks.db");
    let standIn: Awaited<ReturnType<typeof startRedisStandIn>>;
    let nc: NatsConnection;
    let jsm: JetStreamManager;
    let amqpConn: amqp.ChannelModel;
    let amqpCh: amqp.Channel;
    const redis = createClient({ socket: { host: brokers.redis.host, port: brokers.redis.port } });
    const cleanup: (() => Promise<unknown>)[] = [];

    before(async () => {
      nc = await natsConnect({ servers: `${brokers.nats.host}:${brokers.nats.port}` });
      jsm = await jetstreamManager(nc);
      amqpConn = await amqp.connect(`amqp://guest:guest@${brokers.rabbitmq.host}:${brokers.rabbitmq.port}`);
      amqpCh = await amqpConn.createChannel();
      await redis.connect();
      standIn = await startRedisStandIn();
      stack = await startStack({
        taskTypes: [twoSteps],
        dbPath,
        secretKeys: [SECRET_KEY],
        // Two quick retries, then slower ones: a test flips a broker back up between them.
        outbound: { retry_schedule_s: [0, 0.2, 0.2, 2, 2, 2], allow_private_networks: true },
      });
    });
    after(async () => {
      await stack.close();
      await standIn.close();
      for (const c of cleanup) await c().catch(() => {});
      await amqpConn.close();
      await nc.close();
      await redis.close();
      tmp.cleanup();
    });

    const as = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });
    const createSink = (body: unknown, key = stack.key) => stack.api("/v1/sinks", { body, ...as(key) });
    const deliveries = async (id: string, key = stack.key) =>
      stack.api(`/v1/sinks/${id}/deliveries?limit=200`, as(key));
    const allDelivered = (id: string, n?: number) =>
      waitFor(
        async () => {
          const data = (await deliveries(id)).body.data as any[];
          const ok = data.length > 0 && (n === undefined || data.length === n);
          return ok && data.every((d) => d.state === "delivered") ? data : null;
        },
        60_000,
        `every delivery of ${id} delivered`,
      );
    async function runTask(): Promise<string> {
      const r = await stack.api("/v1/tasks", { body: { type: "sinks.steps", input: {} } });
      assert.equal(r.status, 202);
      const id = r.body.task_id as string;
      await waitFor(async () => (await stack.api(`/v1/tasks/${id}`)).body.status === "succeeded", 60_000);
      return id;
    }
    /** A Redis stream's entries, oldest first. */
    const xrange = async (key: string) =>
      ((await redis.xRange(key, "-", "+")) ?? []).map((e) => ({
        id: e.id,
        message: e.message as Record<string, string>,
      }));
    /** The delivery log of one task, oldest event first. */
    const ofTask = (data: any[], taskId: string) =>
      data.filter((d) => d.event.task_id === taskId).sort((a, b) => a.event.seq - b.event.seq);

    test("a task's events arrive on each broker in seq order, keyed by the task id, with the event's id", async () => {
      const subject = tag();
      const stream = subject.toUpperCase();
      await jsm.streams.add({ name: stream, subjects: [`${subject}.>`] });
      cleanup.push(() => jsm.streams.delete(stream));
      const exchange = tag();
      await amqpCh.assertExchange(exchange, "topic", { durable: true });
      const q = await amqpCh.assertQueue("", { exclusive: true });
      await amqpCh.bindQueue(q.queue, exchange, "#");
      cleanup.push(() => amqpCh.deleteExchange(exchange));
      const redisStream = tag();
      cleanup.push(() => redis.del(redisStream));

      const url = (port: number, scheme: string) => `${scheme}://127.0.0.1:${port}`;
      const nats = await createSink({ kind: "nats", url: url(4222, "nats"), subject });
      assert.equal(nats.status, 201, JSON.stringify(nats.body));
      assert.match(nats.body.id, /^we_/);
      assert.deepEqual(
        [nats.body.kind, nats.body.subject, nats.body.exchange, nats.body.stream, nats.body.status],
        ["nats", subject, null, null, "enabled"],
      );
      const rabbit = await createSink({
        kind: "rabbitmq",
        url: "amqp://guest:guest@127.0.0.1:5672/",
        exchange,
        events: ["task.*", "task.*"],
      });
      assert.equal(rabbit.status, 201, JSON.stringify(rabbit.body));
      assert.equal(rabbit.body.url, "amqp://127.0.0.1:5672", "the answer never shows credentials");
      assert.deepEqual(rabbit.body.events, ["task.*"]);
      const red = await createSink({ kind: "redis", url: url(6379, "redis"), stream: redisStream });
      assert.equal(red.status, 201, JSON.stringify(red.body));

      const taskId = await runTask();

      // NATS: <subject>.<task id>.<event type>, Nats-Msg-Id the event's id, in seq order.
      const natsLog = ofTask(await allDelivered(nats.body.id), taskId);
      assert.equal(natsLog[0].event.type, "task.created");
      assert.equal(natsLog.at(-1).event.type, "task.succeeded");
      const stored = await waitFor(async () => {
        const info = await jsm.streams.info(stream);
        return info.state.messages === natsLog.length ? info : null;
      }, 60_000);
      assert.equal(stored.state.messages, natsLog.length);
      for (let i = 0; i < natsLog.length; i++) {
        const m = await jsm.streams.getMessage(stream, { seq: i + 1 });
        assert.ok(m);
        assert.equal(m.subject, `${subject}.${taskId}.${natsLog[i].event.type}`);
        assert.equal(m.header?.get("Nats-Msg-Id"), String(natsLog[i].event.seq));
        const body = m.json<any>();
        // The event as /v1/events shows it, with its id.
        assert.deepEqual(Object.keys(body), ["id", "seq", "task_id", "type", "data", "created_at"]);
        assert.equal(body.id, String(natsLog[i].event.seq));
        assert.equal(body.type, natsLog[i].event.type);
        assert.equal(body.seq, natsLog[i].event.seq);
        assert.equal(body.task_id, taskId);
      }

      // RabbitMQ: routing key the event type, persistent, message_id the event's id, in seq order.
      const rabbitLog = ofTask(await allDelivered(rabbit.body.id), taskId);
      assert.deepEqual(
        rabbitLog.map((d) => d.event.type),
        ["task.created", "task.running", "task.succeeded"],
      );
      const got: amqp.GetMessage[] = [];
      await waitFor(async () => {
        const m = await amqpCh.get(q.queue, { noAck: true });
        if (m) got.push(m);
        return got.length === rabbitLog.length;
      }, 60_000);
      got.forEach((m, i) => {
        assert.equal(m.fields.routingKey, rabbitLog[i].event.type);
        assert.equal(m.properties.headers?.["task-id"], taskId);
        assert.equal(m.properties.deliveryMode, 2, "persistent");
        assert.equal(m.properties.messageId, String(rabbitLog[i].event.seq));
        assert.equal(m.properties.type, rabbitLog[i].event.type);
        assert.equal(JSON.parse(m.content.toString()).seq, rabbitLog[i].event.seq);
      });

      // Redis: XADD with id, task_id, type, seq and data fields, in seq order.
      const redisLog = ofTask(await allDelivered(red.body.id), taskId);
      const entries = await xrange(redisStream);
      assert.deepEqual(
        entries.map((e) => [e.message.id, e.message.task_id, e.message.type, Number(e.message.seq)]),
        redisLog.map((d) => [String(d.event.seq), taskId, d.event.type, d.event.seq]),
      );
      assert.equal(JSON.parse(entries[0]!.message.data!).task_id, taskId);
    });

    test("the same delivery published twice is stored once on NATS (Nats-Msg-Id) and Redis (idempotency key)", async () => {
      const subject = tag();
      const stream = subject.toUpperCase();
      await jsm.streams.add({ name: stream, subjects: [`${subject}.>`] });
      cleanup.push(() => jsm.streams.delete(stream));
      const redisStream = tag();
      cleanup.push(() => redis.del([redisStream, redisDedupeKey(redisStream, "dl_twice")]));
      const message = { id: "dl_twice", key: "tk_once", type: "task.created", seq: 1, body: "{}" };
      const base = { address: "127.0.0.1", tls: false };

      const n = await openNats({ ...base, url: new URL("nats://127.0.0.1"), port: 4222, target: subject });
      const r = await openRedis({
        ...base,
        url: new URL("redis://127.0.0.1"),
        port: 6379,
        target: redisStream,
      });
      try {
        for (let i = 0; i < 2; i++) {
          await n.publish(message, 10_000);
          await r.publish(message, 10_000);
        }
        await n.publish({ ...message, id: "dl_other" }, 10_000);
        await r.publish({ ...message, id: "dl_other" }, 10_000);
      } finally {
        await n.close();
        await r.close();
        cleanup.push(() => redis.del(redisDedupeKey(redisStream, "dl_other")));
      }
      assert.equal((await jsm.streams.info(stream)).state.messages, 2);
      assert.deepEqual(
        (await xrange(redisStream)).map((e) => e.message.id),
        ["dl_twice", "dl_other"],
      );
    });

    test("the pool reuses one connection per sink, and closes it once it has sat idle", async () => {
      const stream = tag();
      cleanup.push(() => redis.del(stream));
      const pool = new SinkPool(300);
      const c = {
        url: new URL("redis://127.0.0.1"),
        address: "127.0.0.1",
        port: 6379,
        tls: false,
        target: stream,
      };
      const first = await pool.get("we_pool", "redis", c);
      await first.publish(
        { id: "dl_pool1", key: "tk_pool", type: "task.created", seq: 1, body: "{}" },
        10_000,
      );
      assert.equal(
        await pool.get("we_pool", "redis", c),
        first,
        "the same connection serves the next delivery",
      );
      assert.equal(pool.size, 1);
      await waitFor(() => pool.size === 0, 60_000, "the idle connection closed");
      assert.equal(first.usable(), false);
      const again = await pool.get("we_pool", "redis", c);
      assert.notEqual(again, first, "a later delivery opens a new one");
      await again.publish(
        { id: "dl_pool2", key: "tk_pool", type: "task.running", seq: 2, body: "{}" },
        10_000,
      );
      await pool.close();
      assert.equal(again.usable(), false);
      assert.equal(pool.size, 0);
      cleanup.push(() => redis.del([redisDedupeKey(stream, "dl_pool1"), redisDedupeKey(stream, "dl_pool2")]));
      assert.deepEqual(
        (await xrange(stream)).map((e) => e.message.id),
        ["dl_pool1", "dl_pool2"],
      );
    });

    test("a broker that refuses is retried, the task's later events wait, and all go out in order once it is back", async () => {
      const redisStream = tag();
      cleanup.push(() => redis.del(redisStream));
      standIn.setUp(false);
      const sink = await createSink({
        kind: "redis",
        url: `redis://127.0.0.1:${standIn.port}`,
        stream: redisStream,
        events: ["task.*"],
      });
      assert.equal(sink.status, 201);
      const r = await stack.api("/v1/tasks", { body: { type: "sinks.steps", input: {} } });
      const taskId = r.body.task_id as string;
      // The first event fails twice; the later ones have not been tried (they wait their turn).
      const failing = await waitFor(async () => {
        const log = ofTask((await deliveries(sink.body.id)).body.data, taskId);
        return log.length === 3 && log[0].attempts >= 2 ? log : null;
      }, 60_000);
      standIn.setUp(true);
      assert.equal(failing[0].state, "pending");
      assert.equal(failing[0].last_error.code, "CONNECTION_FAILED");
      for (const later of failing.slice(1)) assert.equal(later.attempts, 0, "a later event waits its turn");
      const log = ofTask(await allDelivered(sink.body.id, 3), taskId);
      const entries = await xrange(redisStream);
      assert.deepEqual(
        entries.map((e) => e.message.type),
        ["task.created", "task.running", "task.succeeded"],
      );
      assert.deepEqual(
        entries.map((e) => e.message.id),
        log.map((d) => String(d.event.seq)),
      );
    });

    test("a delivery dead after its last retry is replayed once the broker is back", async () => {
      const redisStream = tag();
      cleanup.push(() => redis.del(redisStream));
      standIn.setUp(false);
      const sink = await createSink({
        kind: "redis",
        url: `redis://127.0.0.1:${standIn.port}`,
        stream: redisStream,
        events: ["task.created"],
      });
      const taskId = await runTask();
      const dead = await waitFor(async () => {
        const d = ofTask((await deliveries(sink.body.id)).body.data, taskId)[0];
        return d?.state === "dead" ? d : null;
      }, 60_000);
      assert.equal(dead.attempts, 6);
      assert.match(dead.last_error.message, /gave up after 6 attempts/);
      standIn.setUp(true);
      const client = new LonghaulClient({ baseUrl: stack.url, apiKey: stack.key });
      const replayed = await client.replayEventSinkDelivery(sink.body.id, dead.id);
      assert.equal(replayed.state, "pending");
      await allDelivered(sink.body.id, 1);
      const entries = await xrange(redisStream);
      assert.deepEqual(
        entries.map((e) => [e.message.id, e.message.task_id]),
        [[String(dead.event.seq), taskId]],
      );
    });

    test("the broker URL is sealed at rest and its credentials appear in no answer or error", async () => {
      const password = `pw-${randomBytes(8).toString("hex")}`;
      const sink = await createSink({
        kind: "redis",
        url: `redis://someone:${password}@127.0.0.1:6379/0`,
        stream: tag(),
        events: ["task.created"],
      });
      assert.equal(sink.status, 201);
      assert.ok(!JSON.stringify(sink.body).includes(password));
      assert.ok(!sink.body.url.includes("someone"));
      await runTask();
      // Redis refuses the unknown user: the attempt fails, quoting Redis without the password.
      const failed = await waitFor(async () => {
        const d = (await deliveries(sink.body.id)).body.data[0];
        return d?.last_error ? d : null;
      }, 60_000);
      assert.equal(failed.last_error.code, "CONNECTION_FAILED");
      assert.ok(!failed.last_error.message.includes(password), failed.last_error.message);
      const list = await stack.api("/v1/sinks");
      assert.ok(!JSON.stringify(list.body).includes(password));
      const db = new Database(dbPath, { readonly: true });
      const row = db.prepare("SELECT * FROM webhook_endpoints WHERE id = ?").get(sink.body.id) as any;
      db.close();
      assert.match(row.secret, /^enc:v2:/);
      assert.ok(!JSON.stringify(row).includes(password));
      await stack.api(`/v1/sinks/${sink.body.id}`, { method: "DELETE" });
    });

    test("sinks are the tenant's own, and apart from webhook endpoints", async () => {
      const otherKey = newApiKey();
      await stack.store.createTenant({ name: "other-sinks", keyHash: hashApiKey(otherKey) });
      const client = new LonghaulClient({ baseUrl: stack.url, apiKey: stack.key });
      const stream = tag();
      cleanup.push(() => redis.del(stream));
      const mine = await client.createEventSink({ kind: "redis", url: "redis://127.0.0.1:6379", stream });
      const id = mine.id;
      assert.equal(mine.stream, stream);
      assert.ok((await client.listEventSinks()).some((e) => e.id === id));
      await runTask();
      const d = await waitFor(
        async () => (await client.eventSinkDeliveries(id, { limit: 5 })).data[0],
        60_000,
      );

      assert.deepEqual((await stack.api("/v1/sinks", as(otherKey))).body.data, []);
      for (const [method, path] of [
        ["GET", `/v1/sinks/${id}`],
        ["GET", `/v1/sinks/${id}/deliveries`],
        ["POST", `/v1/sinks/${id}/deliveries/${d.id}/replay`],
        ["DELETE", `/v1/sinks/${id}`],
      ] as const) {
        const r = await stack.api(path, { method, ...as(otherKey) });
        assert.equal(r.status, 404, `${method} ${path}`);
        assert.equal(r.body.error.code, "EVENT_SINK_NOT_FOUND", `${method} ${path}`);
      }
      // The webhook routes do not see a sink (its secret is a broker URL, not a signing key).
      const hooks = await stack.api("/v1/webhook-endpoints");
      assert.ok(!hooks.body.data.some((e: any) => e.id === id));
      const rotate = await stack.api(`/v1/webhook-endpoints/${id}/rotate-secret`, {
        method: "POST",
        body: {},
      });
      assert.equal(rotate.status, 404);
      assert.equal((await stack.api(`/v1/sinks/${id}`)).body.id, id);
      await client.deleteEventSink(id);
      assert.equal((await stack.api(`/v1/sinks/${id}`)).status, 404);
      assert.equal((await deliveries(id)).status, 404, "its delivery log went with it");
    });

    test("bad input is 400 with a stable code, and nothing is written", async () => {
      const before = (await stack.api("/v1/sinks")).body.data.length;
      const cases: [unknown, string][] = [
        [{ kind: "kafka", url: "kafka://127.0.0.1:9092", subject: "x" }, "VALIDATION_FAILED"],
        [{ kind: "nats", url: "not a url :pw-hidden", subject: "x" }, "VALIDATION_FAILED"],
        [{ kind: "nats", url: "http://127.0.0.1:4222", subject: "x" }, "VALIDATION_FAILED"],
        [{ kind: "nats", url: "tls://127.0.0.1:4222", subject: "x" }, "VALIDATION_FAILED"],
        [{ kind: "redis", url: "amqp://127.0.0.1", stream: "x" }, "VALIDATION_FAILED"],
        [{ kind: "nats", url: "nats://127.0.0.1:4222" }, "VALIDATION_FAILED"],
        [{ kind: "nats", url: "nats://127.0.0.1:4222", subject: "x", stream: "y" }, "VALIDATION_FAILED"],
        [{ kind: "rabbitmq", url: "amqp://127.0.0.1", exchange: "has space" }, "VALIDATION_FAILED"],
        [{ kind: "redis", url: "redis://u:pw-hidden@169.254.169.254:6379", stream: "s" }, "TARGET_FORBIDDEN"],
      ];
      for (const [body, code] of cases) {
        const r = await createSink(body);
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.equal(r.body.error.code, code, JSON.stringify(r.body));
        assert.ok(!JSON.stringify(r.body).includes("pw-hidden"), JSON.stringify(r.body));
      }
      // Without outbound.allow_private_networks a loopback broker is refused like a webhook URL.
      await assert.rejects(
        createEventSink(
          { outbound: stack.store, settings: outboundSettings({}), maxPerTenant: 0 },
          { tenantId: stack.tenantId, kind: "redis", url: "redis://127.0.0.1:6379", target: "s" },
        ),
        (err: any) => err.code === "TARGET_FORBIDDEN",
      );
      assert.equal((await stack.api("/v1/sinks")).body.data.length, before);
    });
  });
}
