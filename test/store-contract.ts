import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ManualClock } from "../src/core/clock.ts";
import { LonghaulError } from "../src/core/errors.ts";
import type { Lease, Store, WorkItem } from "../src/store/store.ts";
import { PARK_MS as PARK_WAIT_MS } from "../src/store/work-items.ts";

/**
 * The behaviour every Store implementation must show, written once against the interface.
 * `open` returns a fresh, migrated, empty store on the given clock; `close` releases it.
 */
export function storeContract(name: string, open: (clock: ManualClock) => Promise<Store>): void {
  const setup = async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const store = await open(clock);
    const tenant = await store.createTenant({ name: "acme", keyHash: `hash-acme-${Math.random()}` });
    const other = await store.createTenant({ name: "other", keyHash: `hash-other-${Math.random()}` });
    return { clock, store, tenant, other };
  };
  const submit = (
    store: Store,
    tenantId: string,
    extra: { clientRequestId?: string; input?: unknown } = {},
  ) =>
    store.submitTask({
      tenantId,
      type: "demo.echo",
      input: extra.input ?? { text: "hi" },
      clientRequestId: extra.clientRequestId ?? null,
      userId: null,
      traceId: null,
    });
  const claimOne = async (store: Store, owner = "w1", leaseMs = 30_000) => {
    const [item] = await store.claim(owner, 1, leaseMs);
    assert.ok(item, "expected a claimable item");
    return { item, lease: { itemId: item.id, owner } satisfies Lease };
  };
  const rejectsCode = async (p: Promise<unknown>, code: string) => {
    await assert.rejects(p, (e: unknown) => e instanceof LonghaulError && e.code === code);
  };

  describe(`${name} store contract`, () => {
    test("a submitted task is pending, has a task.created event and one advance item", async () => {
      const { store, tenant } = await setup();
      const { task, created } = await submit(store, tenant.id);
      assert.equal(created, true);
      assert.equal(task.status, "pending");
      const events = await store.taskEvents(tenant.id, 0, 10);
      assert.deepEqual(
        events.map((e) => e.type),
        ["task.created"],
      );
      const { item } = await claimOne(store);
      assert.equal(item.kind, "advance");
      assert.equal(item.payload.taskId, task.id);
      await store.close();
    });

    test("the same client_request_id returns the existing task, per tenant", async () => {
      const { store, tenant, other } = await setup();
      const a = await submit(store, tenant.id, { clientRequestId: "req-1" });
      const b = await submit(store, tenant.id, { clientRequestId: "req-1" });
      assert.equal(b.created, false);
      assert.equal(b.task.id, a.task.id);
      const c = await submit(store, other.id, { clientRequestId: "req-1" });
      assert.equal(c.created, true);
      assert.notEqual(c.task.id, a.task.id);
      await rejectsCode(
        submit(store, tenant.id, { clientRequestId: "req-1", input: { text: "other" } }),
        "IDEMPOTENCY_CONFLICT",
      );
      await store.close();
    });

    test("concurrent submits with one client_request_id create one task", async () => {
      const { store, tenant } = await setup();
      const results = await Promise.all(
        Array.from({ length: 20 }, () => submit(store, tenant.id, { clientRequestId: "same" })),
      );
      assert.equal(new Set(results.map((r) => r.task.id)).size, 1);
      assert.equal(results.filter((r) => r.created).length, 1);
      await store.close();
    });

    test("another tenant cannot read or cancel a task", async () => {
      const { store, tenant, other } = await setup();
      const { task } = await submit(store, tenant.id);
      assert.equal(await store.getTask(other.id, task.id), null);
      assert.notEqual(await store.getTask(tenant.id, task.id), null);
      await rejectsCode(store.cancelTask(other.id, task.id), "TASK_NOT_FOUND");
      assert.equal((await store.listTasks(other.id, { limit: 10 })).tasks.length, 0);
      await store.close();
    });

    test("listing pages through tasks newest first with a cursor", async () => {
      const { store, tenant, clock } = await setup();
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        clock.advance(1);
        ids.push((await submit(store, tenant.id)).task.id);
      }
      const p1 = await store.listTasks(tenant.id, { limit: 2 });
      assert.deepEqual(
        p1.tasks.map((t) => t.id),
        [ids[4], ids[3]],
      );
      const p2 = await store.listTasks(tenant.id, { limit: 2, cursor: p1.nextCursor! });
      const p3 = await store.listTasks(tenant.id, { limit: 2, cursor: p2.nextCursor! });
      assert.deepEqual(
        [...p2.tasks, ...p3.tasks].map((t) => t.id),
        [ids[2], ids[1], ids[0]],
      );
      assert.equal(p3.nextCursor, null);
      await store.close();
    });

    test("a leased item is not claimed again until its lease expires and is recovered", async () => {
      const { store, tenant, clock } = await setup();
      await submit(store, tenant.id);
      const { lease } = await claimOne(store, "w1", 1000);
      assert.equal((await store.claim("w2", 10, 1000)).length, 0);
      clock.advance(1001);
      assert.equal(await store.recoverExpiredLeases(), 1);
      const again = await claimOne(store, "w2", 1000);
      assert.equal(again.item.attempts, 2);
      // The first holder is fenced off: its late writes are refused.
      await rejectsCode(store.complete(lease), "LEASE_LOST");
      await store.complete(again.lease);
      await store.close();
    });

    test("items with one concurrency key are never leased at the same time", async () => {
      const { store, tenant } = await setup();
      const { task } = await submit(store, tenant.id);
      const { lease } = await claimOne(store);
      // A new advance for the same task while one is leased: pending, but not claimable.
      await store.enqueue([
        {
          kind: "advance",
          tenantId: tenant.id,
          payload: { taskId: task.id },
          dedupeKey: `advance:${task.id}`,
          concurrencyKey: `task:${task.id}`,
        },
      ]);
      assert.equal((await store.claim("w2", 10, 1000)).length, 0);
      await store.complete(lease);
      assert.equal((await store.claim("w2", 10, 1000)).length, 1);
      await store.close();
    });

    test("a dedupe key keeps one pending item, due at the earlier time", async () => {
      const { store, clock } = await setup();
      const now = clock.now();
      await store.enqueue([
        { kind: "timeout", tenantId: null, payload: { n: 1 }, dedupeKey: "k", runAt: now + 5000 },
      ]);
      await store.enqueue([
        { kind: "timeout", tenantId: null, payload: { n: 2 }, dedupeKey: "k", runAt: now + 1000 },
      ]);
      assert.equal(await store.nextRunAt(), now + 1000);
      clock.advance(1000);
      const items = await store.claim("w", 10, 1000);
      assert.equal(items.length, 1);
      await store.close();
    });

    test("delayed items wait for run_at", async () => {
      const { store, clock } = await setup();
      await store.enqueue([{ kind: "timeout", tenantId: null, payload: {}, runAt: clock.now() + 60_000 }]);
      assert.equal((await store.claim("w", 10, 1000)).length, 0);
      clock.advance(60_000);
      assert.equal((await store.claim("w", 10, 1000)).length, 1);
      await store.close();
    });

    test("a failed item retries at the given time, then goes to the dead letter", async () => {
      const { store, clock } = await setup();
      await store.enqueue([{ kind: "cancel_job", tenantId: null, payload: {}, maxAttempts: 2 }]);
      const first = await claimOne(store);
      assert.equal(await store.fail(first.lease, "boom 1", clock.now() + 500), "retry");
      assert.equal((await store.claim("w", 10, 1000)).length, 0);
      clock.advance(500);
      const second = await claimOne(store);
      assert.equal(await store.fail(second.lease, "boom 2", clock.now()), "dead");
      assert.equal((await store.claim("w", 10, 1000)).length, 0);
      const dead = await store.deadItems(10);
      assert.equal(dead.length, 1);
      assert.equal(dead[0]!.lastError, "boom 2");
      await store.close();
    });

    test("an event delivered twice is recorded once", async () => {
      const { store } = await setup();
      const body = Buffer.from('{"id":"e1"}');
      const a = await store.recordEvent({ source: "sim", provider: "sim", eventId: "e1", body });
      const b = await store.recordEvent({ source: "sim", provider: "sim", eventId: "e1", body });
      assert.equal(a.duplicate, false);
      assert.equal(b.duplicate, true);
      assert.equal(a.id, b.id);
      const items = await store.claim("w", 10, 1000);
      assert.equal(items.filter((i) => i.kind === "apply_event").length, 1);
      await store.close();
    });

    /** Drives a task to the point where its job exists with external id `ext`. */
    const taskWithJob = async (store: Store, tenantId: string, ext: string | null) => {
      const { task } = await submit(store, tenantId);
      const adv = await claimOne(store);
      assert.equal(await store.beginAdvance(adv.lease, task.id), "started");
      await store.registerWait(adv.lease, task.id, {
        kind: "job",
        stepId: "echo",
        position: 0,
        provider: "sim",
        input: { text: "hi" },
        timeoutMs: null,
        pollAfterMs: null,
        cancelOnTimeout: true,
      });
      await store.finishAdvance(adv.lease, task.id, { kind: "suspended" });
      const disp = await claimOne(store);
      assert.equal(disp.item.kind, "dispatch");
      const jobId = String(disp.item.payload.jobId);
      if (ext !== null) await store.recordJobCreated(disp.lease, jobId, ext, "created");
      return { task, jobId, dispatchLease: disp.lease };
    };
    const deliver = async (
      store: Store,
      eventId: string,
      type: "job.running" | "job.succeeded",
      jobExt: string,
    ) => {
      const r = await store.recordEvent({ source: "sim", provider: "sim", eventId, body: Buffer.from("{}") });
      const items = await store.claim("w", 10, 1000);
      const apply = items.find((i) => i.kind === "apply_event" && i.payload.inboxId === r.id);
      assert.ok(apply);
      return store.applyJobEvent({ itemId: apply.id, owner: "w" }, r.id, "sim", {
        eventId,
        type,
        jobId: jobExt,
        ...(type === "job.succeeded" ? { output: { text: "hi" } } : {}),
      });
    };

    test("a job event ends its step and queues one advance", async () => {
      const { store, tenant } = await setup();
      const { task } = await taskWithJob(store, tenant.id, "ext-1");
      assert.equal(await deliver(store, "e-ok", "job.succeeded", "ext-1"), "applied");
      const d = await store.getTask(tenant.id, task.id);
      assert.equal(d!.steps[0]!.status, "succeeded");
      assert.deepEqual(d!.steps[0]!.output, { text: "hi" });
      assert.equal(d!.jobs[0]!.status, "succeeded");
      const next = await store.claim("w", 10, 1000);
      assert.deepEqual(
        next.map((i) => i.kind),
        ["advance"],
      );
      await store.close();
    });

    test("a running event after succeeded is recorded and ignored", async () => {
      const { store, tenant } = await setup();
      const { task } = await taskWithJob(store, tenant.id, "ext-2");
      assert.equal(await deliver(store, "e-done", "job.succeeded", "ext-2"), "applied");
      assert.equal(await deliver(store, "e-late", "job.running", "ext-2"), "ignored");
      const d = await store.getTask(tenant.id, task.id);
      assert.equal(d!.jobs[0]!.status, "succeeded");
      await store.close();
    });

    test("an event that arrives before its job is known is applied once the job is recorded", async () => {
      const { store, tenant } = await setup();
      const { task, jobId, dispatchLease } = await taskWithJob(store, tenant.id, null);
      assert.equal(await deliver(store, "e-early", "job.succeeded", "ext-3"), "unmatched");
      await store.recordJobCreated(dispatchLease, jobId, "ext-3", "created");
      const [apply] = await store.claim("w", 10, 1000);
      assert.equal(apply?.kind, "apply_event");
      const inboxId = String(apply!.payload.inboxId);
      assert.equal(
        await store.applyJobEvent({ itemId: apply!.id, owner: "w" }, inboxId, "sim", {
          eventId: "e-early",
          type: "job.succeeded",
          jobId: "ext-3",
          output: 1,
        }),
        "applied",
      );
      assert.equal((await store.getTask(tenant.id, task.id))!.steps[0]!.status, "succeeded");
      await store.close();
    });

    test("a step.run outcome is stored once and a task ends once", async () => {
      const { store, tenant } = await setup();
      const { task } = await submit(store, tenant.id);
      const { lease } = await claimOne(store);
      await store.beginAdvance(lease, task.id);
      await store.storeRunOutcome(lease, task.id, {
        stepId: "a",
        position: 0,
        status: "succeeded",
        output: 1,
        attempts: 1,
      });
      await store.storeRunOutcome(lease, task.id, {
        stepId: "a",
        position: 0,
        status: "succeeded",
        output: 2,
        attempts: 2,
      });
      const loaded = await store.loadForAdvance(task.id);
      assert.equal(loaded!.history.length, 1);
      assert.equal(loaded!.history[0]!.output, 1);
      await store.finishAdvance(lease, task.id, { kind: "succeeded", output: "done" });
      const t = (await store.getTask(tenant.id, task.id))!.task;
      assert.equal(t.status, "succeeded");
      await rejectsCode(store.cancelTask(tenant.id, task.id), "TASK_NOT_CANCELABLE");
      const types = (await store.taskEvents(tenant.id, 0, 50)).map((e) => e.type);
      assert.deepEqual(types, ["task.created", "task.running", "step.succeeded", "task.succeeded"]);
      await store.close();
    });

    test("a wait past its deadline times out its step and advances the task", async () => {
      const { store, tenant, clock } = await setup();
      const { task } = await submit(store, tenant.id);
      const adv = await claimOne(store);
      await store.beginAdvance(adv.lease, task.id);
      await store.registerWait(adv.lease, task.id, {
        kind: "job",
        stepId: "slow",
        position: 0,
        provider: "sim",
        input: null,
        timeoutMs: 5000,
        pollAfterMs: null,
        cancelOnTimeout: true,
      });
      await store.finishAdvance(adv.lease, task.id, { kind: "suspended" });
      const disp = await claimOne(store);
      await store.recordJobCreated(disp.lease, String(disp.item.payload.jobId), "ext-slow", "created");
      clock.advance(5000);
      const [timer] = (await store.claim("w", 10, 1000)).filter((i) => i.kind === "timeout");
      assert.ok(timer);
      assert.equal(await store.fireTimeout({ itemId: timer.id, owner: "w" }, task.id, "slow"), true);
      const d = (await store.getTask(tenant.id, task.id))!;
      assert.equal(d.steps[0]!.status, "timed_out");
      assert.equal(d.steps[0]!.error!.code, "JOB_TIMED_OUT");
      const kinds = (await store.claim("w", 10, 1000)).map((i) => i.kind).sort();
      assert.deepEqual(kinds, ["advance", "cancel_job"]);
      await store.close();
    });

    test("inbox rows past the dedupe horizon are pruned, newer ones kept", async () => {
      const { store, clock } = await setup();
      await store.recordEvent({ source: "sim", provider: "sim", eventId: "old", body: Buffer.from("{}") });
      clock.advance(7 * 86_400_000);
      await store.recordEvent({ source: "sim", provider: "sim", eventId: "new", body: Buffer.from("{}") });
      assert.equal(await store.pruneInbox(clock.now() - 86_400_000), 1);
      const left = await store.listInbox({ limit: 10 });
      assert.deepEqual(
        left.events.map((e) => e.eventId),
        ["new"],
      );
      await store.close();
    });

    /** A task suspended on a callback step `cb` with a deadline `timeoutMs` away. */
    const taskWithCallback = async (store: Store, tenantId: string, timeoutMs: number) => {
      const { task } = await submit(store, tenantId);
      const adv = await claimOne(store);
      await store.beginAdvance(adv.lease, task.id);
      await store.registerWait(adv.lease, task.id, {
        kind: "callback",
        stepId: "cb",
        position: 0,
        timeoutMs,
        verifySource: null,
      });
      await store.finishAdvance(adv.lease, task.id, { kind: "suspended" });
      const delivery = (body: string) => ({
        tenantId,
        taskId: task.id,
        stepId: "cb",
        attempt: 1,
        output: JSON.parse(body) as unknown,
        body: Buffer.from(body),
      });
      return { task, delivery };
    };
    const callbackInbox = async (store: Store) =>
      (await store.listInbox({ source: "callback", limit: 100 })).events;

    test("a callback body sent again is a duplicate; another body is refused and only its hash kept", async () => {
      const { store, tenant } = await setup();
      const { task, delivery } = await taskWithCallback(store, tenant.id, 60_000);
      const body = JSON.stringify({ pages: 3 });
      assert.equal(await store.completeCallback(delivery(body)), "accepted");
      assert.equal(await store.completeCallback(delivery(body)), "duplicate");
      const big = JSON.stringify({ pad: "y".repeat(500 * 1024) });
      assert.equal(await store.completeCallback(delivery(big)), "already_used");
      const step = (await store.getTask(tenant.id, task.id))!.steps[0]!;
      assert.deepEqual(step.output, { pages: 3 });
      assert.equal(step.lateOutput, null);
      const rows = await callbackInbox(store);
      assert.equal(rows.length, 3);
      const applied = rows.filter((r) => r.status === "applied");
      assert.equal(applied.length, 1);
      assert.equal(applied[0]!.body.toString(), body);
      const refused = rows.filter((r) => r.status === "ignored");
      assert.deepEqual(
        refused.map((r) => r.body.length),
        [0, 0],
      );
      assert.ok(refused.some((r) => r.note?.includes(`${Buffer.byteLength(big)} bytes`)));
      assert.ok(refused.some((r) => r.note?.startsWith("duplicate")));
      await store.close();
    });

    test("late callbacks keep the first small result once, and only hash and size of a large one", async () => {
      const { store, tenant, clock } = await setup();
      const small = await taskWithCallback(store, tenant.id, 1000);
      clock.advance(1001);
      assert.equal(await store.completeCallback(small.delivery('{"n":1}')), "expired");
      assert.equal(await store.completeCallback(small.delivery('{"n":2}')), "expired");
      const kept = (await store.getTask(tenant.id, small.task.id))!.steps[0]!.lateOutput as Record<
        string,
        unknown
      >;
      assert.deepEqual(kept.output, { n: 1 });
      assert.equal(kept.size, 7);
      assert.match(String(kept.sha256), /^[0-9a-f]{64}$/);

      const large = await taskWithCallback(store, tenant.id, 1000);
      clock.advance(1001);
      const big = JSON.stringify({ pad: "z".repeat(500 * 1024) });
      for (let i = 0; i < 3; i++) {
        assert.equal(await store.completeCallback(large.delivery(big)), "expired");
      }
      const late = (await store.getTask(tenant.id, large.task.id))!.steps[0]!.lateOutput as Record<
        string,
        unknown
      >;
      assert.equal(late.output, undefined);
      assert.equal(late.size, Buffer.byteLength(big));
      assert.ok(JSON.stringify(late).length < 1024);
      const rows = await callbackInbox(store);
      assert.equal(rows.length, 5);
      assert.ok(rows.every((r) => r.status === "ignored" && r.body.length === 0));
      await store.close();
    });

    test("signals past the retention are pruned, and a wait registered later no longer sees them", async () => {
      const { store, tenant, clock } = await setup();
      const { task } = await submit(store, tenant.id);
      const old = { tenantId: tenant.id, name: "paid", data: { id: 1 }, clientId: "sig-old" };
      await store.recordSignal(old);
      clock.advance(2 * 86_400_000);
      await store.recordSignal({ tenantId: tenant.id, name: "paid", data: { id: 2 }, clientId: null });
      assert.equal(await store.pruneSignals(clock.now() - 86_400_000), 1);
      assert.equal(await store.pruneSignals(clock.now() - 86_400_000), 0);

      const adv = await claimOne(store);
      await store.beginAdvance(adv.lease, task.id);
      const wait = (stepId: string, position: number, id: number) =>
        store.registerWait(adv.lease, task.id, {
          kind: "wait_event",
          stepId,
          position,
          timeoutMs: null,
          match: { event: "paid", data: { id } },
        });
      assert.equal((await wait("pruned", 0, 1)).status, "waiting");
      assert.equal((await wait("kept", 1, 2)).status, "succeeded");
      // Its id no longer marks a resend as a duplicate: the resend is a new signal.
      const again = await store.recordSignal(old);
      assert.equal(again.duplicate, false);
      assert.equal(again.matched, 1);
      await store.close();
    });

    test("a tenant at its webhook endpoint cap cannot create another, even with creates racing", async () => {
      const { store, tenant, other } = await setup();
      const create = (tenantId: string, maxPerTenant?: number) =>
        store.createWebhookEndpoint({
          tenantId,
          url: "https://example.com/hooks",
          events: null,
          secret: "whsec_x",
          maxPerTenant,
        });
      const results = await Promise.allSettled(Array.from({ length: 6 }, () => create(tenant.id, 2)));
      assert.equal(results.filter((r) => r.status === "fulfilled").length, 2);
      for (const r of results.filter((r) => r.status === "rejected")) {
        assert.ok(r.reason instanceof LonghaulError && r.reason.code === "LIMIT_REACHED", String(r.reason));
      }
      assert.equal((await store.listWebhookEndpoints(tenant.id)).length, 2);
      await create(other.id, 2);
      await create(tenant.id);
      const [first] = await store.listWebhookEndpoints(tenant.id);
      await store.deleteWebhookEndpoint(tenant.id, first!.id);
      await rejectsCode(create(tenant.id, 2), "LIMIT_REACHED");
      await store.deleteWebhookEndpoint(tenant.id, (await store.listWebhookEndpoints(tenant.id))[0]!.id);
      await create(tenant.id, 2);
      await store.close();
    });

    test("claim fairness: one item of a second tenant is claimed before 2× concurrency of a 10,000-item backlog", async () => {
      const { store, clock, tenant, other } = await setup();
      const backlog = Array.from({ length: 10_000 }, (_, i) => ({
        kind: "advance" as const,
        tenantId: tenant.id,
        payload: { taskId: `a${i}` },
        dedupeKey: `advance:a${i}`,
        concurrencyKey: `task:a${i}`,
      }));
      for (let i = 0; i < backlog.length; i += 1000) await store.enqueue(backlog.slice(i, i + 1000));
      clock.advance(1);
      await store.enqueue([
        { kind: "advance", tenantId: other.id, payload: { taskId: "b0" }, concurrencyKey: "task:b0" },
      ]);
      // A worker of `concurrency` slots: it claims what is free, finishes it, claims again.
      const concurrency = 8;
      let claimedOfA = 0;
      let claimedB = false;
      while (!claimedB && claimedOfA < 2 * concurrency) {
        const items = await store.claim("w", concurrency, 30_000);
        assert.ok(items.length > 0, "due work is claimed");
        for (const it of items) {
          if (it.tenantId === other.id) claimedB = true;
          else claimedOfA++;
          await store.complete({ itemId: it.id, owner: "w" });
        }
      }
      assert.ok(claimedB, `tenant B's item was not claimed within the first ${claimedOfA} items of tenant A`);
      assert.ok(claimedOfA < 2 * concurrency, `${claimedOfA} of A's items went first`);
      await store.close();
    });

    test("claim fairness keeps one advancer per task, and lanes take turns", async () => {
      const { store, clock, tenant, other } = await setup();
      // Two items of one task in tenant A's lane, then one of tenant B and a tenant-less one.
      await store.enqueue([
        { kind: "advance", tenantId: tenant.id, payload: { n: 1 }, concurrencyKey: "task:t1" },
        { kind: "timeout", tenantId: tenant.id, payload: { n: 2 }, concurrencyKey: "task:t1" },
        { kind: "advance", tenantId: tenant.id, payload: { n: 3 }, concurrencyKey: "task:t2" },
      ]);
      clock.advance(1);
      await store.enqueue([
        { kind: "advance", tenantId: other.id, payload: { n: 4 }, concurrencyKey: "task:t3" },
      ]);
      clock.advance(1);
      await store.enqueue([{ kind: "apply_event", tenantId: null, payload: { n: 5 } }]);
      const first = await store.claim("w", 10, 30_000);
      assert.deepEqual(
        first.map((i) => i.payload.n),
        [1, 4, 5, 3],
        "each lane's first item, then the next; never two items of task t1",
      );
      assert.deepEqual(
        (await store.claim("w", 10, 30_000)).map((i) => i.payload.n),
        [],
        "t1's second item waits while its first is leased",
      );
      await store.complete({ itemId: first[0]!.id, owner: "w" });
      assert.deepEqual(
        (await store.claim("w", 10, 30_000)).map((i) => i.payload.n),
        [2],
      );
      await store.close();
    });

    /** Claims what is due and finishes every item but the one `want` picks (none may be a dispatch). */
    const claimFor = async (store: Store, want: (i: WorkItem) => boolean) => {
      const items = await store.claim("w", 50, 30_000);
      const found = items.find(want);
      for (const other of items) {
        if (other === found) continue;
        assert.notEqual(other.kind, "dispatch", "no other dispatch is claimed by the way");
        await store.complete({ itemId: other.id, owner: "w" });
      }
      return found ? { item: found, lease: { itemId: found.id, owner: "w" } satisfies Lease } : null;
    };
    /**
     * Submits a task whose one step is a job declaring `maxTokens`, and claims the job's
     * dispatch; `admit` asks the store to admit it, as the dispatcher does (claiming the
     * dispatch again once it was parked).
     */
    const admitJob = async (store: Store, tenantId: string, maxTokens: number | null) => {
      const { task } = await submit(store, tenantId);
      const adv = await claimFor(store, (i) => i.kind === "advance" && i.payload.taskId === task.id);
      assert.ok(adv, "the task's advance is claimed");
      assert.equal(await store.beginAdvance(adv.lease, task.id), "started");
      await store.registerWait(adv.lease, task.id, {
        kind: "job",
        stepId: "llm",
        position: 0,
        provider: "sim",
        input: { prompt: "hi" },
        timeoutMs: null,
        pollAfterMs: null,
        cancelOnTimeout: true,
        maxTokens,
      });
      await store.finishAdvance(adv.lease, task.id, { kind: "suspended" });
      const jobId = String((await store.getTask(tenantId, task.id))!.jobs[0]!.id);
      let held = (await claimFor(store, (i) => i.kind === "dispatch" && i.payload.jobId === jobId))?.lease;
      const admit = async () => {
        const lease =
          held ?? (await claimFor(store, (i) => i.kind === "dispatch" && i.payload.jobId === jobId))?.lease;
        held = undefined;
        if (!lease) return "not due" as const;
        const verdict = await store.acquireJobSlot(lease, jobId);
        if (verdict === "ok") await store.recordJobCreated(lease, jobId, `ext-${jobId}`, "created");
        if (verdict === "rejected") {
          await store.failJob(lease, jobId, { code: "BUDGET_EXCEEDED", message: "over budget" });
        }
        return verdict;
      };
      return { task, jobId, admit };
    };
    /** The job ends at its provider having used `tokens`. */
    const endWithUsage = async (store: Store, jobId: string, tokens: number) => {
      const r = await store.recordEvent({
        source: "sim",
        provider: "sim",
        eventId: `done-${jobId}`,
        body: Buffer.from("{}"),
      });
      const apply = await claimFor(store, (i) => i.kind === "apply_event" && i.payload.inboxId === r.id);
      assert.ok(apply);
      const outcome = await store.applyJobEvent(apply.lease, r.id, "sim", {
        eventId: `done-${jobId}`,
        type: "job.succeeded",
        jobId: `ext-${jobId}`,
        output: { text: "ok" },
        usage: { total_tokens: tokens },
      });
      assert.equal(outcome, "applied");
    };

    test("a daily token budget counts today's usage and resets at midnight UTC", async () => {
      const { store, clock, tenant } = await setup();
      await store.updateTenant(tenant.id, { quotas: { token_budget: 100, budget_period: "day" } });
      const first = await admitJob(store, tenant.id, null);
      const second = await admitJob(store, tenant.id, null);
      assert.equal(await first.admit(), "ok");
      await endWithUsage(store, first.jobId, 100);
      const spent = (await store.getTenant(tenant.id))!;
      assert.equal(spent.tokensThisPeriod, 100);
      assert.equal(spent.budgetPeriodStart, "2026-01-01");
      assert.equal(await second.admit(), "parked", "the day's budget is spent");
      clock.advance(86_400_000);
      const nextDay = (await store.getTenant(tenant.id))!;
      assert.equal(nextDay.tokensThisPeriod, 0, "a new day, a new budget");
      assert.equal(nextDay.tokensUsed, 100, "the all-time count stays");
      assert.equal(nextDay.budgetPeriodStart, "2026-01-02");
      assert.equal(await second.admit(), "ok");
      await store.close();
    });

    test("a monthly token budget (the default) keeps counting through the month and resets on the 1st", async () => {
      const { store, clock, tenant } = await setup();
      await store.updateTenant(tenant.id, { quotas: { token_budget: 100, budget_policy: "reject" } });
      const first = await admitJob(store, tenant.id, null);
      const second = await admitJob(store, tenant.id, null);
      assert.equal(await first.admit(), "ok");
      await endWithUsage(store, first.jobId, 120);
      clock.advance(30 * 86_400_000); // 2026-01-31
      assert.equal((await store.getTenant(tenant.id))!.tokensThisPeriod, 120);
      assert.equal(await second.admit(), "rejected", "spent this month, policy reject");
      clock.advance(86_400_000); // 2026-02-01
      const feb = (await store.getTenant(tenant.id))!;
      assert.equal(feb.tokensThisPeriod, 0);
      assert.equal(feb.budgetPeriodStart, "2026-02-01");
      const third = await admitJob(store, tenant.id, null);
      assert.equal(await third.admit(), "ok");
      await store.close();
    });

    test("a running job's max tokens are held against the budget: a second job that would overshoot parks until the first ends", async () => {
      const { store, clock, tenant } = await setup();
      await store.updateTenant(tenant.id, { quotas: { token_budget: 100 } });
      const first = await admitJob(store, tenant.id, 60);
      const second = await admitJob(store, tenant.id, 60);
      assert.equal(await first.admit(), "ok");
      assert.equal((await store.getTenant(tenant.id))!.tokensReserved, 60);
      assert.equal(await second.admit(), "parked", "60 used or held + 60 more would pass 100");
      clock.advance(PARK_WAIT_MS);
      assert.equal(await second.admit(), "parked", "still parked while the first runs");
      await endWithUsage(store, first.jobId, 25);
      const after = (await store.getTenant(tenant.id))!;
      assert.equal(after.tokensReserved, 0, "the hold is replaced by the actual usage");
      assert.equal(after.tokensThisPeriod, 25);
      assert.equal(await second.admit(), "ok", "the job's end woke the parked dispatch");
      assert.equal((await store.getTenant(tenant.id))!.tokensReserved, 60);
      await store.close();
    });

    test("meta keeps the first value written", async () => {
      const { store } = await setup();
      assert.equal(await store.putMetaIfAbsent("k", "one"), "one");
      assert.equal(await store.putMetaIfAbsent("k", "two"), "one");
      assert.equal(await store.getMeta("k"), "one");
      await store.close();
    });

    test("a rotated endpoint secret signs next to the previous one until it expires, per tenant", async () => {
      const { clock, store, tenant, other } = await setup();
      const e = await store.createWebhookEndpoint({
        tenantId: tenant.id,
        url: "https://example.com/h",
        events: null,
        secret: "s-old",
      });
      assert.equal(e.previousSecretExpiresAt, null);
      assert.equal(await store.rotateWebhookEndpointSecret(other.id, e.id, "s-x", 1000), null);
      const until = clock.now() + 60_000;
      const rotated = await store.rotateWebhookEndpointSecret(tenant.id, e.id, "s-new", 60_000);
      assert.equal(rotated?.previousSecretExpiresAt, until);
      await submit(store, tenant.id);
      const page = await store.listWebhookDeliveries(tenant.id, e.id, { limit: 10 });
      const deliveryId = page!.deliveries[0]!.id;
      const during = await store.deliveryForAttempt(deliveryId);
      assert.equal(during?.endpoint.secret, "s-new");
      assert.equal(during?.endpoint.previousSecret, "s-old");
      clock.advance(60_000);
      const after = await store.deliveryForAttempt(deliveryId);
      assert.equal(after?.endpoint.secret, "s-new");
      assert.equal(after?.endpoint.previousSecret, null);
      // No overlap: the replaced secret stops at once.
      await store.rotateWebhookEndpointSecret(tenant.id, e.id, "s-third", null);
      const now = await store.deliveryForAttempt(deliveryId);
      assert.equal(now?.endpoint.secret, "s-third");
      assert.equal(now?.endpoint.previousSecret, null);
      assert.equal((await store.listWebhookEndpoints(tenant.id))[0]?.previousSecretExpiresAt, null);
      await store.close();
    });

    test("resealing rewrites endpoint secrets and the named meta values, and leaves the rest", async () => {
      const { store, tenant } = await setup();
      const e = await store.createWebhookEndpoint({
        tenantId: tenant.id,
        url: "https://example.com/h",
        events: null,
        secret: "plain-1",
      });
      await store.rotateWebhookEndpointSecret(tenant.id, e.id, "plain-2", 60_000);
      await store.putMetaIfAbsent("secret.k", "plain-3");
      await store.putMetaIfAbsent("other.k", "plain-4");
      const mark = (s: string) => (s.startsWith("sealed:") ? s : `sealed:${s}`);
      assert.equal(await store.resealSecrets(mark, ["secret.k", "missing.k"]), 3);
      assert.equal(await store.resealSecrets(mark, ["secret.k", "missing.k"]), 0);
      assert.equal(await store.getMeta("secret.k"), "sealed:plain-3");
      assert.equal(await store.getMeta("other.k"), "plain-4");
      await submit(store, tenant.id);
      const page = await store.listWebhookDeliveries(tenant.id, e.id, { limit: 10 });
      const input = await store.deliveryForAttempt(page!.deliveries[0]!.id);
      assert.equal(input?.endpoint.secret, "sealed:plain-2");
      assert.equal(input?.endpoint.previousSecret, "sealed:plain-1");
      await store.close();
    });
  });
}
