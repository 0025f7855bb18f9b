import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { createLonghaul, type Longhaul } from "../src/app.ts";
import { hashApiKey, newApiKey } from "../src/core/api-keys.ts";
import { ManualClock } from "../src/core/clock.ts";
import { defineTask } from "../src/index.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import type { Store } from "../src/store/store.ts";
import { quietLog, tempDir, waitFor } from "./helpers.ts";
import { startReceiver } from "./notify-sinks.ts";
import { pgAvailableOrReport, pgTestSchemas, pgUnreachable, pgUrl } from "./pg-env.ts";

// Reminders, escalation and a month-long approval on an injected clock, on both stores: the
// messages owed with the wait, at a reminder and at the escalation are written by the store.

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

function suite(name: string, makeStore: (clock: ManualClock) => Store) {
  describe(`approval reminders and escalation (${name})`, () => {
    let app: Longhaul;
    let url: string;
    let key: string;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    const clock = new ManualClock(Date.now());

    before(async () => {
      receiver = await startReceiver();
      const to = [{ channel: "webhook" as const, url: `${receiver.url}/hook` }];
      const store = makeStore(clock);
      await store.migrate();
      key = newApiKey();
      await store.createTenant({ name: "t", keyHash: hashApiKey(key) });
      app = await createLonghaul({
        store,
        clock,
        logger: quietLog(),
        taskTypes: [
          defineTask("remind", async (_i, step) =>
            step.approval("ok", {
              approvers: ["dana@acme.test", "erin@acme.test"],
              quorum: 2,
              notify: to,
              remindAfter: "1h",
              escalate: { after: "2h", to: ["boss@acme.test"] },
              timeout: "1d",
            }),
          ),
          defineTask("legacy", async (_i, step) =>
            step.approval("ok", {
              approvers: ["dana@acme.test"],
              notify: to,
              escalateAfter: "1h",
              escalateTo: ["boss@acme.test"],
            }),
          ),
          defineTask("month", async (_i, step) =>
            step.approval("ok", { approvers: ["dana@acme.test"], notify: to, timeout: "30d" }),
          ),
          defineTask("on-timeout", async (_i, step) =>
            step.approval("ok", {
              approvers: ["dana@acme.test"],
              notify: to,
              timeout: "1h",
              onTimeout: "escalate",
              // No delay of its own: the escalation waits for the deadline, then the wait goes on by timeout again.
              escalate: { to: ["boss@acme.test"] },
            }),
          ),
        ],
        worker: { leaseMs: 60_000, idleMs: 20 },
        outbound: { allow_private_networks: true },
        notify: { webhook_secret: SECRET },
        publicUrl: "http://127.0.0.1:1",
      });
      url = await app.listen({ port: 0 });
    });
    after(async () => {
      await app.close();
      await receiver.close();
    });

    const api = async (path: string, body?: unknown) => {
      const res = await fetch(url + path, {
        method: body === undefined ? "GET" : "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return (await res.json()) as any;
    };
    const submit = async (type: string) => (await api("/v1/tasks", { type, input: {} })).task_id as string;
    /** The messages the receiver got for a task, as their bodies' data. */
    const messages = (id: string) =>
      receiver.hits.map((h) => JSON.parse(h.body)).filter((b) => b.data.task_id === id);
    /**
     * The task's first `n` messages, once each one's attempt is recorded too: the clock must not
     * jump while a message's item is leased, or its lease (on the same clock) would expire and
     * the message be sent again, as after a worker's death.
     */
    const waitMessages = (id: string, n: number, what: string) =>
      waitFor(
        async () => {
          if (messages(id).length < n) return null;
          const owed: { status: string }[] = (await api(`/v1/tasks/${id}`)).steps?.[0]?.notifications ?? [];
          return owed.length >= n && owed.every((x) => x.status !== "pending") ? messages(id) : null;
        },
        30_000,
        what,
      );
    /** Decide through a link as it travels: the public URL is not this server's, so its path is used here. */
    const decide = async (link: string) => {
      const res = await fetch(url + new URL(link).pathname, { method: "POST" });
      return res.status;
    };
    const ended = (id: string) =>
      waitFor(
        async () => {
          const t = await api(`/v1/tasks/${id}`);
          return ["succeeded", "failed", "timed_out"].includes(t.status) ? t : null;
        },
        30_000,
        `task ${id} to end`,
      );

    test("a reminder goes to who has not decided; the escalation adds and tells its approvers", async () => {
      const id = await submit("remind");
      const asked = await waitMessages(id, 2, "the two requests");
      const dana = asked.find((m) => m.data.approver === "dana@acme.test")!;
      assert.equal(await decide(dana.data.links.approve_url), 200);
      clock.advance(HOUR);
      const reminded = await waitMessages(id, 3, "the reminder");
      assert.deepEqual(
        reminded.slice(2).map((m) => [m.type, m.data.approver]),
        [["approval.reminder", "erin@acme.test"]],
      );
      clock.advance(HOUR);
      const escalated = await waitMessages(id, 4, "the escalation");
      const boss = escalated[3];
      assert.deepEqual([boss.type, boss.data.approver], ["approval.escalated", "boss@acme.test"]);
      assert.equal(await decide(boss.data.links.approve_url), 200);
      const t = await ended(id);
      assert.equal(t.status, "succeeded");
      assert.equal(t.output.by, "boss@acme.test");
      assert.deepEqual(
        t.steps[0].notifications.map((n: any) => [n.reason, n.approver, n.status]),
        [
          ["request", "dana@acme.test", "sent"],
          ["request", "erin@acme.test", "sent"],
          ["reminder", "erin@acme.test", "sent"],
          ["escalation", "boss@acme.test", "sent"],
        ],
      );
    });

    test("escalateAfter and escalateTo still escalate, now to approvers who are told", async () => {
      const id = await submit("legacy");
      await waitMessages(id, 1, "the request");
      clock.advance(HOUR);
      const all = await waitMessages(id, 2, "the escalation");
      assert.equal(all[1].data.approver, "boss@acme.test");
      assert.equal(await decide(all[1].data.links.approve_url), 200);
      const t = await ended(id);
      assert.equal(t.output.approved, true);
      assert.equal(t.output.by, "boss@acme.test");
    });

    test("a 30-day approval is decided on day 29 through the link of its first message", async () => {
      const id = await submit("month");
      const [first] = await waitMessages(id, 1, "the request");
      const step = (await api(`/v1/tasks/${id}`)).steps[0];
      assert.equal(Date.parse(step.deadline) - clock.now(), 30 * DAY);
      assert.equal(first.data.deadline, step.deadline);
      clock.advance(29 * DAY);
      assert.equal(await decide(first.data.links.approve_url), 200);
      const t = await ended(id);
      assert.equal(t.status, "succeeded");
      assert.equal(t.output.by, "dana@acme.test");
    });

    test('onTimeout "escalate" escalates at the deadline and waits on; the next deadline times out', async () => {
      const id = await submit("on-timeout");
      await waitMessages(id, 1, "the request");
      clock.advance(HOUR + 1);
      const all = await waitMessages(id, 3, "the escalation at the deadline, and a reminder");
      assert.deepEqual(
        all
          .slice(1)
          .map((m) => [m.type, m.data.approver])
          .sort(),
        [
          ["approval.escalated", "boss@acme.test"],
          ["approval.reminder", "dana@acme.test"],
        ],
      );
      // The reminder's links are minted for the deadline that moved on.
      const reminder = all.find((m) => m.type === "approval.reminder")!;
      assert.equal(Date.parse(reminder.data.deadline), clock.now() + HOUR);
      const step = (await api(`/v1/tasks/${id}`)).steps[0];
      assert.equal(step.status, "waiting");
      assert.equal(Date.parse(step.deadline), clock.now() + HOUR, "the deadline moved on by the timeout");
      clock.advance(HOUR + 1);
      const t = await ended(id);
      assert.equal(t.status, "timed_out");
    });
  });
}

const tmp = tempDir();
after(() => tmp.cleanup());
suite("sqlite", (clock) => new SqliteStore({ path: join(tmp.dir, "reminders.db"), clock }));
if (pgAvailableOrReport(await pgUnreachable(), "PostgreSQL approval reminder tests")) {
  const { fresh } = pgTestSchemas();
  suite("postgres", (clock) => new PostgresStore({ url: pgUrl(fresh()), clock }));
}
