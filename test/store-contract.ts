import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ManualClock } from "../src/core/clock.ts";
import { LonghaulError } from "../src/core/errors.ts";
import type { Lease, Store } from "../src/store/store.ts";

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
      assert.equal(await store.rotateWebhookEndpointSecret(other.id, e.id, "s-x", clock.now() + 1000), null);
      const until = clock.now() + 60_000;
      const rotated = await store.rotateWebhookEndpointSecret(tenant.id, e.id, "s-new", until);
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
      const { clock, store, tenant } = await setup();
      const e = await store.createWebhookEndpoint({
        tenantId: tenant.id,
        url: "https://example.com/h",
        events: null,
        secret: "plain-1",
      });
      await store.rotateWebhookEndpointSecret(tenant.id, e.id, "plain-2", clock.now() + 60_000);
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
