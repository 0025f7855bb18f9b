import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ManualClock } from "../src/core/clock.ts";
import { SINK_TURN_WAIT_MS } from "../src/core/delivery.ts";
import { MAX_PREVIOUS_SECRETS } from "../src/core/endpoint-secrets.ts";
import { LonghaulError } from "../src/core/errors.ts";
import { PARK_MS as PARK_WAIT_MS } from "../src/core/work-item.ts";
import type { DeliveryState, Lease, Store, WebhookDeliveryRow, WorkItem } from "../src/store/store.ts";

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
      assert.equal(await store.taskStatus(task.id), "pending");
      assert.equal(await store.taskStatus("t_missing"), null);
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

    test("listing by a created-at range keeps the tasks created in [from, before), with the other filters and the cursor", async () => {
      const { store, tenant, other, clock } = await setup();
      const t0 = clock.now();
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) {
        ids.push((await submit(store, tenant.id)).task.id);
        clock.advance(60_000);
      }
      await submit(store, other.id);
      // ids[i] was created at t0 + i minutes.
      const range = { createdFrom: t0 + 60_000, createdBefore: t0 + 4 * 60_000 };
      const all = await store.listTasks(tenant.id, { limit: 10, ...range });
      assert.deepEqual(
        all.tasks.map((t) => t.id),
        [ids[3], ids[2], ids[1]],
      );
      const p1 = await store.listTasks(tenant.id, { limit: 2, ...range });
      const p2 = await store.listTasks(tenant.id, { limit: 2, ...range, cursor: p1.nextCursor! });
      assert.deepEqual(
        [...p1.tasks, ...p2.tasks].map((t) => t.id),
        [ids[3], ids[2], ids[1]],
      );
      assert.equal(p2.nextCursor, null);
      const from = await store.listTasks(tenant.id, { limit: 10, createdFrom: t0 + 5 * 60_000 });
      assert.deepEqual(
        from.tasks.map((t) => t.id),
        [ids[5]],
      );
      const before = await store.listTasks(tenant.id, { limit: 10, createdBefore: t0 + 1 });
      assert.deepEqual(
        before.tasks.map((t) => t.id),
        [ids[0]],
      );
      assert.equal(
        (await store.listTasks(tenant.id, { limit: 10, ...range, status: "succeeded" })).tasks.length,
        0,
      );
      assert.equal(
        (await store.listTasks(tenant.id, { limit: 10, ...range, type: "demo.echo" })).tasks.length,
        3,
      );
      await store.close();
    });

    test("stats rows: tasks submitted in the window and those that ended in it, per tenant, newest first and capped", async () => {
      const { store, tenant, other, clock } = await setup();
      const t0 = clock.now();
      const { task: early } = await submit(store, tenant.id);
      const { item, lease } = await claimOne(store);
      assert.equal(item.payload.taskId, early.id);
      clock.advance(10_000);
      const { task: late } = await submit(store, tenant.id);
      await submit(store, other.id);
      // The first task ends 30 s after it was submitted; the second has not started.
      clock.advance(20_000);
      assert.equal(await store.beginAdvance(lease, early.id), "started");
      await store.finishAdvance(lease, early.id, { kind: "succeeded", output: "done" });
      const rows = await store.taskStatsRows(tenant.id, t0, t0 + 60_000, 100);
      assert.deepEqual(rows.submitted, [t0 + 10_000, t0]);
      assert.deepEqual(rows.ended, [{ status: "succeeded", createdAt: t0, updatedAt: t0 + 30_000 }]);
      const capped = await store.taskStatsRows(tenant.id, t0, t0 + 60_000, 1);
      assert.deepEqual(capped.submitted, [t0 + 10_000]);
      const outside = await store.taskStatsRows(tenant.id, t0 + 31_000, t0 + 60_000, 100);
      assert.deepEqual(outside, { submitted: [], ended: [] });
      assert.equal(late.status, "pending");
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

    test("an expired lease of an item's last attempt sends it to the dead letter", async () => {
      const { store, clock } = await setup();
      await store.enqueue([{ kind: "cancel_job", tenantId: null, payload: {}, maxAttempts: 1 }]);
      const { lease } = await claimOne(store, "w1", 1000);
      clock.advance(1001);
      assert.equal(await store.recoverExpiredLeases(), 1);
      assert.equal((await store.claim("w2", 10, 1000)).length, 0);
      const dead = await store.deadItems(10);
      assert.deepEqual(
        dead.map((d) => [d.status, d.lastError]),
        [["dead", "lease of w1 expired"]],
      );
      await rejectsCode(store.complete(lease), "LEASE_LOST");
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

    test("an event id bound to one body is a duplicate with that body, and reports another without recording it", async () => {
      const { store } = await setup();
      const e = { source: "gemini", provider: "gemini", eventId: "jwt:token-sha", bindsBody: true };
      const first = await store.recordEvent({ ...e, body: Buffer.from('{"a":1}') });
      assert.deepEqual(await store.recordEvent({ ...e, body: Buffer.from('{"a":1}') }), {
        id: first.id,
        duplicate: true,
      });
      assert.deepEqual(await store.recordEvent({ ...e, body: Buffer.from('{"a":2}') }), {
        id: first.id,
        duplicate: true,
        bodyDiffers: true,
      });
      // Unbound, another body under a known id is the plain duplicate it always was.
      assert.deepEqual(await store.recordEvent({ ...e, bindsBody: false, body: Buffer.from("{}") }), {
        id: first.id,
        duplicate: true,
      });
      assert.deepEqual((await store.getInboxEvent(first.id))!.body, Buffer.from('{"a":1}'));
      const items = await store.claim("w", 10, 1000);
      assert.equal(items.filter((i) => i.kind === "apply_event").length, 1);
      await store.close();
    });

    test("a confirmed event is marked ignored with what it named, and the provider's answer is recorded once", async () => {
      const { store } = await setup();
      const answer = {
        source: "poll",
        provider: "sim",
        eventId: "poll:ext-c:succeeded",
        body: Buffer.from('{"id":"poll:ext-c:succeeded"}'),
      };
      const seen = { type: "job.succeeded", jobExternalId: "ext-c", note: "confirmed with the provider" };
      const confirm = async (eventId: string) => {
        const r = await store.recordEvent({
          source: "gemini",
          provider: "sim",
          eventId,
          body: Buffer.from("{}"),
        });
        const [apply] = await store.claim("w", 10, 1000);
        assert.equal(apply?.payload.inboxId, r.id);
        await store.recordConfirmation({ itemId: apply!.id, owner: "w" }, r.id, seen, answer);
        return r.id;
      };
      const id = await confirm("jwt:t1");
      const row = (await store.getInboxEvent(id))!;
      assert.deepEqual(
        [row.status, row.type, row.jobExternalId, row.note],
        ["ignored", "job.succeeded", "ext-c", "confirmed with the provider"],
      );
      const [applyAnswer] = await store.claim("w", 10, 1000);
      assert.equal(applyAnswer?.kind, "apply_event");
      const recorded = (await store.getInboxEvent(String(applyAnswer!.payload.inboxId)))!;
      assert.deepEqual([recorded.source, recorded.eventId], ["poll", "poll:ext-c:succeeded"]);
      // A twin (a retry with a fresh token) confirmed with the same answer does not record it again.
      await confirm("jwt:t2");
      assert.deepEqual(await store.claim("w", 10, 1000), []);
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

    test("canceling a task cancels its waiting step and asks its job at the provider to stop", async () => {
      const { store, tenant } = await setup();
      const { task } = await taskWithJob(store, tenant.id, "ext-stop");
      assert.equal((await store.cancelTask(tenant.id, task.id)).status, "canceled");
      const d = (await store.getTask(tenant.id, task.id))!;
      assert.equal(d.steps[0]!.status, "canceled");
      assert.equal(d.jobs[0]!.status, "created", "it ends when its provider says so");
      const items = await store.claim("w", 10, 1000);
      assert.deepEqual(
        items.map((i) => [i.kind, i.payload.jobId]),
        [["cancel_job", d.jobs[0]!.id]],
      );
      assert.equal((await store.taskEvents(tenant.id, 0, 50)).at(-1)!.type, "task.canceled");
      await store.close();
    });

    test("a job canceled before its provider created it stays canceled once its creation is recorded", async () => {
      const { store, tenant } = await setup();
      const { task, jobId, dispatchLease } = await taskWithJob(store, tenant.id, null);
      await store.cancelTask(tenant.id, task.id);
      assert.equal((await store.getJob(jobId))!.status, "canceled");
      assert.deepEqual(await store.claim("w", 10, 1000), [], "no provider job to stop");
      await store.recordJobCreated(dispatchLease, jobId, "ext-late", "running");
      const job = (await store.getJob(jobId))!;
      assert.deepEqual([job.status, job.externalId], ["canceled", "ext-late"]);
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

    const signal = (
      store: Store,
      tenantId: string,
      name: string,
      id: number,
      clientId: string | null = null,
    ) => store.recordSignal({ tenantId, name, data: { id }, clientId });
    /** Registers on the advance `lease` a step `stepId` waiting for signal `paid` with data `{ id }`. */
    const waitForPaid = (
      store: Store,
      lease: Lease,
      taskId: string,
      stepId: string,
      position: number,
      id: number,
    ) =>
      store.registerWait(lease, taskId, {
        kind: "wait_event",
        stepId,
        position,
        timeoutMs: 60_000,
        match: { event: "paid", data: { id } },
      });

    test("a signal sent after its task was created but before the wait ends the wait when it is registered", async () => {
      const { store, tenant, other, clock } = await setup();
      await signal(store, tenant.id, "paid", 1);
      clock.advance(1);
      const { task } = await submit(store, tenant.id);
      clock.advance(1);
      await signal(store, other.id, "paid", 2);
      await signal(store, tenant.id, "refunded", 2);
      const hit = await signal(store, tenant.id, "paid", 2);
      assert.equal(hit.matched, 0, "nothing waits yet");
      const adv = await claimOne(store);
      assert.equal(await store.beginAdvance(adv.lease, task.id), "started");
      const step = await waitForPaid(store, adv.lease, task.id, "paid-2", 0, 2);
      assert.equal(step.status, "succeeded");
      assert.deepEqual(step.output, { id: hit.id, name: "paid", data: { id: 2 } }, "this tenant's signal");
      const older = await waitForPaid(store, adv.lease, task.id, "paid-1", 1, 1);
      assert.equal(older.status, "waiting", "a signal from before the task was created is not for it");
      await store.close();
    });

    test("a signal ends the wait it matches and queues one advance; another tenant, name or data does not", async () => {
      const { store, tenant, other, clock } = await setup();
      const { task } = await submit(store, tenant.id);
      const adv = await claimOne(store);
      await store.beginAdvance(adv.lease, task.id);
      await waitForPaid(store, adv.lease, task.id, "pay", 0, 7);
      await store.finishAdvance(adv.lease, task.id, { kind: "suspended" });
      assert.equal((await signal(store, other.id, "paid", 7, "c-1")).matched, 0);
      assert.equal((await signal(store, tenant.id, "refunded", 7)).matched, 0);
      assert.equal((await signal(store, tenant.id, "paid", 8)).matched, 0);
      assert.equal((await store.getTask(tenant.id, task.id))!.steps[0]!.status, "waiting");
      const hit = await signal(store, tenant.id, "paid", 7, "c-1");
      assert.equal(hit.duplicate, false, "a client id is per tenant");
      assert.equal(hit.matched, 1);
      assert.deepEqual(await signal(store, tenant.id, "paid", 7, "c-1"), {
        id: hit.id,
        duplicate: true,
        matched: 0,
      });
      const step = (await store.getTask(tenant.id, task.id))!.steps[0]!;
      assert.equal(step.status, "succeeded");
      assert.deepEqual(step.output, { id: hit.id, name: "paid", data: { id: 7 } });
      const items = await store.claim("w", 10, 30_000);
      assert.deepEqual(
        items.map((i) => [i.kind, i.payload.taskId]),
        [["advance", task.id]],
      );
      assert.equal((await signal(store, tenant.id, "paid", 7)).matched, 0, "the wait has ended");
      await store.complete({ itemId: items[0]!.id, owner: "w" });
      clock.advance(60_000);
      assert.deepEqual(await store.claim("w", 10, 30_000), [], "the wait's deadline timer is gone");
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

    test("claim fairness holds for claims of one item: tenants take turns across claims", async () => {
      // A worker whose slots free one at a time (slow handlers, or a concurrency of 1) claims one
      // item at a time: the oldest lane must not win every time.
      const { store, clock, tenant, other } = await setup();
      const third = await store.createTenant({ name: "third", keyHash: `hash-third-${Math.random()}` });
      await store.enqueue(
        Array.from({ length: 20 }, (_, i) => ({
          kind: "maintenance" as const,
          tenantId: tenant.id,
          payload: { i },
        })),
      );
      clock.advance(1);
      await store.enqueue([{ kind: "maintenance", tenantId: other.id, payload: { b: 0 } }]);
      clock.advance(1);
      await store.enqueue([
        { kind: "maintenance", tenantId: third.id, payload: { c: 0 } },
        { kind: "maintenance", tenantId: third.id, payload: { c: 1 } },
      ]);
      const order: string[] = [];
      for (let i = 0; i < 6; i++) {
        const [item, ...more] = await store.claim("w", 1, 30_000);
        assert.ok(item, "due work is claimed");
        assert.equal(more.length, 0);
        order.push(item.tenantId === tenant.id ? "A" : item.tenantId === other.id ? "B" : "C");
        await store.complete({ itemId: item.id, owner: "w" });
      }
      // The first claim takes the oldest lane; then each tenant with due work in turn.
      assert.equal(order[0], "A");
      assert.deepEqual(order.slice(0, 3).sort(), ["A", "B", "C"], `one claim each first: ${order}`);
      assert.deepEqual(order.slice(3, 5).sort(), ["A", "C"], `then A and C again: ${order}`);
      assert.equal(order[5], "A", `then A alone: ${order}`);
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
     * dispatch again once it was parked), and records the job created at the provider unless
     * `create` is false; `failCreate` then fails the admitted job as a refused create does.
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
      let admitted: Lease | undefined;
      const admit = async (create = true) => {
        const lease =
          held ?? (await claimFor(store, (i) => i.kind === "dispatch" && i.payload.jobId === jobId))?.lease;
        held = undefined;
        if (!lease) return "not due" as const;
        const verdict = await store.acquireJobSlot(lease, jobId);
        if (verdict === "ok" && create) await store.recordJobCreated(lease, jobId, `ext-${jobId}`, "created");
        if (verdict === "ok" && !create) admitted = lease;
        if (verdict === "rejected") {
          await store.failJob(lease, jobId, { code: "BUDGET_EXCEEDED", message: "over budget" });
        }
        return verdict;
      };
      const failCreate = async () => {
        assert.ok(admitted, "admitted with admit(false) first");
        await store.failJob(admitted, jobId, { code: "PROVIDER_ERROR", message: "create refused" });
      };
      return { task, jobId, admit, failCreate };
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

    for (const end of ["its event", "a failed create"] as const) {
      test(`with max_concurrent_jobs 1 a second job parks until the first ends by ${end}, which wakes it early`, async () => {
        const { store, clock, tenant } = await setup();
        await store.updateTenant(tenant.id, { quotas: { max_concurrent_jobs: 1 } });
        const first = await admitJob(store, tenant.id, null);
        const second = await admitJob(store, tenant.id, null);
        assert.equal(await first.admit(end === "its event"), "ok");
        assert.equal(await second.admit(), "parked", "the one slot is taken");
        clock.advance(PARK_WAIT_MS - 1);
        assert.equal(await second.admit(), "not due", "parked work waits PARK_MS");
        clock.advance(1);
        assert.equal(await second.admit(), "parked", "pending again after PARK_MS, and parked again");
        if (end === "its event") await endWithUsage(store, first.jobId, 10);
        else await first.failCreate();
        const ended = (await store.getTask(tenant.id, first.task.id))!.jobs[0]!;
        assert.equal(ended.status, end === "its event" ? "succeeded" : "failed");
        assert.equal(await second.admit(), "ok", "the first job's end woke the parked dispatch");
        await store.close();
      });
    }

    test("a new task of a tenant at its job limit waits as pending, and starts once a slot frees", async () => {
      const { store, clock, tenant } = await setup();
      await store.updateTenant(tenant.id, { quotas: { max_concurrent_jobs: 1 } });
      const first = await admitJob(store, tenant.id, null);
      assert.equal(await first.admit(), "ok");
      const { task } = await submit(store, tenant.id);
      const begin = async () => {
        const adv = await claimFor(store, (i) => i.kind === "advance" && i.payload.taskId === task.id);
        return adv ? store.beginAdvance(adv.lease, task.id) : "not due";
      };
      assert.equal(await begin(), "parked");
      assert.equal((await store.getTask(tenant.id, task.id))!.task.status, "pending");
      clock.advance(PARK_WAIT_MS - 1);
      assert.equal(await begin(), "not due");
      clock.advance(1);
      assert.equal(await begin(), "parked", "looked again after PARK_MS; the slot is still taken");
      await endWithUsage(store, first.jobId, 10);
      assert.equal(await begin(), "started", "the job's end woke the parked task");
      assert.equal((await store.getTask(tenant.id, task.id))!.task.status, "running");
      await store.close();
    });

    test("raising a tenant's quota wakes its parked work at once, and no other tenant's update does", async () => {
      const { store, tenant, other } = await setup();
      await store.updateTenant(tenant.id, { quotas: { max_concurrent_jobs: 1 } });
      const first = await admitJob(store, tenant.id, null);
      const second = await admitJob(store, tenant.id, null);
      assert.equal(await first.admit(), "ok");
      assert.equal(await second.admit(), "parked");
      await store.updateTenant(other.id, { quotas: { max_concurrent_jobs: 5 } });
      assert.equal(await second.admit(), "not due", "another tenant's quotas wake nothing here");
      const raised = await store.updateTenant(tenant.id, { quotas: { max_concurrent_jobs: 2 } });
      assert.equal(raised.quotas.max_concurrent_jobs, 2);
      assert.equal(await second.admit(), "ok");
      await store.close();
    });

    test("over a spent budget with the reject policy a job is rejected, not parked, and a new task is refused", async () => {
      const { store, tenant } = await setup();
      await store.updateTenant(tenant.id, { quotas: { token_budget: 100, budget_policy: "reject" } });
      const first = await admitJob(store, tenant.id, null);
      const second = await admitJob(store, tenant.id, null);
      assert.equal(await first.admit(), "ok");
      await endWithUsage(store, first.jobId, 100);
      // admit() fails the rejected job on the lease it still holds; a parked item would be LEASE_LOST.
      assert.equal(await second.admit(), "rejected");
      const d = (await store.getTask(tenant.id, second.task.id))!;
      assert.equal(d.jobs[0]!.status, "failed");
      assert.equal(d.steps[0]!.error?.code, "BUDGET_EXCEEDED");
      await rejectsCode(submit(store, tenant.id), "BUDGET_EXCEEDED");
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
      assert.deepEqual(during?.endpoint.previousSecrets, ["s-old"]);
      clock.advance(60_000);
      const after = await store.deliveryForAttempt(deliveryId);
      assert.equal(after?.endpoint.secret, "s-new");
      assert.deepEqual(after?.endpoint.previousSecrets, []);
      // No overlap: the replaced secret stops at once.
      await store.rotateWebhookEndpointSecret(tenant.id, e.id, "s-third", null);
      const now = await store.deliveryForAttempt(deliveryId);
      assert.equal(now?.endpoint.secret, "s-third");
      assert.deepEqual(now?.endpoint.previousSecrets, []);
      assert.equal((await store.listWebhookEndpoints(tenant.id))[0]?.previousSecretExpiresAt, null);
      await store.close();
    });

    test("a second rotation inside the window keeps the first secret signing until its own expiry", async () => {
      const { clock, store, tenant } = await setup();
      const e = await store.createWebhookEndpoint({
        tenantId: tenant.id,
        url: "https://example.com/h",
        events: null,
        secret: "s1",
      });
      const firstEnds = clock.now() + 60_000;
      await store.rotateWebhookEndpointSecret(tenant.id, e.id, "s2", 60_000);
      clock.advance(10_000);
      const secondEnds = clock.now() + 120_000;
      const twice = await store.rotateWebhookEndpointSecret(tenant.id, e.id, "s3", 120_000);
      assert.equal(twice?.previousSecretExpiresAt, secondEnds, "the last of the windows");
      await submit(store, tenant.id);
      const deliveryId = (await store.listWebhookDeliveries(tenant.id, e.id, { limit: 10 }))!.deliveries[0]!
        .id;
      const secrets = async () => {
        const input = (await store.deliveryForAttempt(deliveryId))!.endpoint;
        return [input.secret, ...input.previousSecrets];
      };
      assert.deepEqual(await secrets(), ["s3", "s1", "s2"]);
      clock.set(firstEnds);
      assert.deepEqual(await secrets(), ["s3", "s2"], "s1 stops at its own expiry");
      // A rotation drops what expired and adds what it replaced.
      await store.rotateWebhookEndpointSecret(tenant.id, e.id, "s4", 1000);
      assert.deepEqual(await secrets(), ["s4", "s2", "s3"]);
      clock.set(secondEnds);
      assert.deepEqual(await secrets(), ["s4"]);
      await store.close();
    });

    test("rotations past MAX_PREVIOUS_SECRETS still signing are refused until one expires; concurrent ones each keep theirs", async () => {
      const { clock, store, tenant } = await setup();
      const e = await store.createWebhookEndpoint({
        tenantId: tenant.id,
        url: "https://example.com/h",
        events: null,
        secret: "s0",
      });
      await Promise.all(
        Array.from({ length: MAX_PREVIOUS_SECRETS }, (_, i) =>
          store.rotateWebhookEndpointSecret(tenant.id, e.id, `s${i + 1}`, 60_000 + i),
        ),
      );
      await submit(store, tenant.id);
      const deliveryId = (await store.listWebhookDeliveries(tenant.id, e.id, { limit: 10 }))!.deliveries[0]!
        .id;
      const input = (await store.deliveryForAttempt(deliveryId))!.endpoint;
      const all = [input.secret, ...input.previousSecrets].sort();
      assert.deepEqual(all, ["s0", "s1", "s2", "s3", "s4", "s5"], "no rotation lost another's secret");
      await assert.rejects(store.rotateWebhookEndpointSecret(tenant.id, e.id, "s-more", 60_000), {
        code: "LIMIT_REACHED",
      });
      assert.equal(
        (await store.deliveryForAttempt(deliveryId))!.endpoint.secret,
        input.secret,
        "nothing changed",
      );
      clock.advance(60_000);
      assert.ok(await store.rotateWebhookEndpointSecret(tenant.id, e.id, "s-more", 60_000));
      await store.close();
    });

    test("resealing rewrites endpoint secrets and the named meta values, given their places, and leaves the rest", async () => {
      const { clock, store, tenant } = await setup();
      const e = await store.createWebhookEndpoint({
        tenantId: tenant.id,
        url: "https://example.com/h",
        events: null,
        secret: (id) => `plain-1@${id}`,
      });
      await store.rotateWebhookEndpointSecret(tenant.id, e.id, "plain-2", 60_000);
      await store.rotateWebhookEndpointSecret(tenant.id, e.id, "plain-3", 1000);
      await store.putMetaIfAbsent("secret.k", "plain-4");
      await store.putMetaIfAbsent("other.k", "plain-5");
      const places: string[] = [];
      const mark = (s: string, at: string) => {
        places.push(at);
        return s.startsWith("sealed:") ? s : `sealed:${s}`;
      };
      clock.advance(1000);
      assert.equal(await store.resealSecrets(mark, ["secret.k", "missing.k"]), 2);
      assert.deepEqual(
        [...new Set(places)],
        [`webhook_endpoints:${e.id}:secret`, "meta:secret.k:value"],
        "every secret of an endpoint has the place of its secret column",
      );
      assert.equal(await store.resealSecrets(mark, ["secret.k", "missing.k"]), 0);
      assert.equal(await store.getMeta("secret.k"), "sealed:plain-4");
      assert.equal(await store.getMeta("other.k"), "plain-5");
      await submit(store, tenant.id);
      const page = await store.listWebhookDeliveries(tenant.id, e.id, { limit: 10 });
      const input = await store.deliveryForAttempt(page!.deliveries[0]!.id);
      assert.equal(input?.endpoint.secret, "sealed:plain-3");
      // The secret made with the endpoint's id still signs; the one that expired was dropped.
      assert.deepEqual(input?.endpoint.previousSecrets, [`sealed:plain-1@${e.id}`]);
      await store.close();
    });

    const endpoint = (store: Store, tenantId: string, events: string[] | null = null) =>
      store.createWebhookEndpoint({ tenantId, url: "https://example.com/hooks", events, secret: "whsec_x" });
    const deliveriesOf = async (store: Store, tenantId: string, endpointId: string) =>
      (await store.listWebhookDeliveries(tenantId, endpointId, { limit: 100 }))?.deliveries ?? null;
    const deliveryRow = async (store: Store, deliveryId: string) =>
      (await store.deliveryForAttempt(deliveryId))!.delivery;
    /** An endpoint of the tenant taking `task.created`, and one delivery to it per task submitted (oldest first). */
    const endpointWithDeliveries = async (store: Store, clock: ManualClock, tenantId: string, n: number) => {
      const e = await endpoint(store, tenantId, ["task.created"]);
      for (let i = 0; i < n; i++) {
        clock.advance(1);
        await submit(store, tenantId);
      }
      return { e, ids: (await deliveriesOf(store, tenantId, e.id))!.map((d) => d.id).reverse() };
    };
    /** Claims what is due, finishes all but the `deliver` items, and returns a lease per delivery id. */
    const claimDeliveries = async (store: Store) => {
      const leases = new Map<string, Lease>();
      for (const it of await store.claim("w", 50, 30_000)) {
        const lease = { itemId: it.id, owner: "w" };
        if (it.kind === "deliver") leases.set(String(it.payload.deliveryId), lease);
        else await store.complete(lease);
      }
      return leases;
    };
    const httpError = (status: number) => ({ code: "HTTP_STATUS", message: `answered ${status}` });

    test("a task event becomes one delivery and one deliver item per enabled endpoint of its tenant whose filter matches", async () => {
      const { store, clock, tenant, other } = await setup();
      const all = await endpoint(store, tenant.id);
      const prefix = await endpoint(store, tenant.id, ["task.*"]);
      const succeeded = await endpoint(store, tenant.id, ["task.succeeded"]);
      const deleted = await endpoint(store, tenant.id);
      const theirs = await endpoint(store, other.id);
      await submit(store, tenant.id);
      // Deleting an endpoint drops its queued deliveries, and later events skip it.
      assert.equal(await store.deleteWebhookEndpoint(tenant.id, deleted.id), true);
      clock.advance(1);
      const { task } = await submit(store, tenant.id);
      const items = await store.claim("w", 50, 30_000);
      const queued = items.filter((i) => i.kind === "deliver").map((i) => String(i.payload.deliveryId));
      const listed = [
        ...(await deliveriesOf(store, tenant.id, all.id))!,
        ...(await deliveriesOf(store, tenant.id, prefix.id))!,
      ];
      assert.deepEqual(
        listed.map((d) => d.eventType),
        ["task.created", "task.created", "task.created", "task.created"],
      );
      assert.deepEqual(queued.sort(), listed.map((d) => d.id).sort());
      assert.deepEqual(await deliveriesOf(store, tenant.id, succeeded.id), []);
      assert.equal(await deliveriesOf(store, tenant.id, deleted.id), null);
      assert.deepEqual(await deliveriesOf(store, other.id, theirs.id), []);
      const adv = items.find((i) => i.kind === "advance" && i.payload.taskId === task.id)!;
      const lease = { itemId: adv.id, owner: "w" };
      await store.beginAdvance(lease, task.id);
      await store.finishAdvance(lease, task.id, { kind: "succeeded", output: null });
      assert.deepEqual(
        (await deliveriesOf(store, tenant.id, succeeded.id))!.map((d) => [d.eventType, d.taskId]),
        [["task.succeeded", task.id]],
      );
      assert.equal(
        (await deliveriesOf(store, tenant.id, prefix.id))!.length,
        4,
        "task.running and task.succeeded too",
      );
      assert.equal((await claimDeliveries(store)).size, 2 + 2 + 1);
      await store.close();
    });

    test("an attempt delivers, retries at the time given, or ends the delivery dead or failed", async () => {
      const { store, clock, tenant } = await setup();
      const { ids } = await endpointWithDeliveries(store, clock, tenant.id, 3);
      const [ok, flaky, redirected] = ids as [string, string, string];
      const leases = await claimDeliveries(store);
      await store.recordDeliveryAttempt(leases.get(ok)!, ok, { outcome: "delivered", status: 204 });
      const retryAt = clock.now() + 1000;
      await store.recordDeliveryAttempt(leases.get(flaky)!, flaky, {
        outcome: "retry",
        status: 503,
        error: httpError(503),
        nextAttemptAt: retryAt,
      });
      await store.recordDeliveryAttempt(leases.get(redirected)!, redirected, {
        outcome: "failed",
        status: 301,
        error: httpError(301),
      });
      const done = await deliveryRow(store, ok);
      assert.deepEqual(
        [done.state, done.attempts, done.lastStatus, done.lastError, done.nextAttemptAt, done.deliveredAt],
        ["delivered", 1, 204, null, null, clock.now()],
      );
      const waiting = await deliveryRow(store, flaky);
      assert.deepEqual(
        [waiting.state, waiting.attempts, waiting.lastStatus, waiting.lastError, waiting.nextAttemptAt],
        ["pending", 1, 503, httpError(503), retryAt],
      );
      assert.equal((await deliveryRow(store, redirected)).state, "failed");
      clock.advance(999);
      assert.equal((await claimDeliveries(store)).size, 0, "only the retry is queued, and it is not due yet");
      clock.advance(1);
      const again = await claimDeliveries(store);
      assert.deepEqual([...again.keys()], [flaky]);
      await store.recordDeliveryAttempt(again.get(flaky)!, flaky, {
        outcome: "dead",
        status: 500,
        error: httpError(500),
      });
      const dead = await deliveryRow(store, flaky);
      assert.deepEqual(
        [dead.state, dead.attempts, dead.roundAttempts, dead.lastStatus, dead.nextAttemptAt],
        ["dead", 2, 2, 500, null],
      );
      clock.advance(86_400_000);
      assert.equal((await claimDeliveries(store)).size, 0, "nothing is left queued");
      await store.close();
    });

    test("a gone answer disables the endpoint, cancels its pending deliveries, and later events skip it", async () => {
      const { store, clock, tenant } = await setup();
      const { e, ids } = await endpointWithDeliveries(store, clock, tenant.id, 1);
      const leases = await claimDeliveries(store);
      await submit(store, tenant.id);
      const [first, second] = (await deliveriesOf(store, tenant.id, e.id))!.map((d) => d.id).reverse();
      assert.equal(first, ids[0]);
      await store.recordDeliveryAttempt(leases.get(first!)!, first!, {
        outcome: "gone",
        status: 410,
        error: { code: "ENDPOINT_GONE", message: "answered 410 Gone" },
      });
      const [disabled] = await store.listWebhookEndpoints(tenant.id);
      assert.equal(disabled?.status, "disabled");
      assert.equal(disabled?.disabledReason, "answered 410 Gone");
      assert.equal((await deliveryRow(store, first!)).state, "failed");
      assert.equal((await deliveryRow(store, second!)).state, "canceled");
      assert.equal((await claimDeliveries(store)).size, 0, "the canceled delivery's item is gone");
      await submit(store, tenant.id);
      assert.equal((await deliveriesOf(store, tenant.id, e.id))!.length, 2);
      await rejectsCode(store.replayWebhookDelivery(tenant.id, e.id, first!), "DELIVERY_NOT_REPLAYABLE");
      await store.close();
    });

    test("an endpoint's deliveries page newest first with a cursor and filter by state", async () => {
      const { store, clock, tenant } = await setup();
      const { e, ids } = await endpointWithDeliveries(store, clock, tenant.id, 5);
      const leases = await claimDeliveries(store);
      await store.recordDeliveryAttempt(leases.get(ids[0]!)!, ids[0]!, { outcome: "delivered", status: 200 });
      await store.recordDeliveryAttempt(leases.get(ids[1]!)!, ids[1]!, {
        outcome: "dead",
        status: 500,
        error: httpError(500),
      });
      const page = async (q: { limit: number; cursor?: string | null; state?: DeliveryState }) => {
        const p = (await store.listWebhookDeliveries(tenant.id, e.id, {
          ...q,
          cursor: q.cursor ?? undefined,
        }))!;
        return { ids: p.deliveries.map((d) => d.id), next: p.nextCursor };
      };
      const p1 = await page({ limit: 2 });
      const p2 = await page({ limit: 2, cursor: p1.next });
      const p3 = await page({ limit: 2, cursor: p2.next });
      assert.deepEqual([p1.ids, p2.ids, p3.ids], [[ids[4], ids[3]], [ids[2], ids[1]], [ids[0]]]);
      assert.equal(p3.next, null);
      const pending1 = await page({ limit: 2, state: "pending" });
      const pending2 = await page({ limit: 2, state: "pending", cursor: pending1.next });
      assert.deepEqual([pending1.ids, pending2.ids], [[ids[4], ids[3]], [ids[2]]]);
      assert.deepEqual((await page({ limit: 10, state: "dead" })).ids, [ids[1]]);
      assert.deepEqual((await page({ limit: 10, state: "delivered" })).ids, [ids[0]]);
      assert.deepEqual((await page({ limit: 10, state: "failed" })).ids, []);
      await store.close();
    });

    test("a replay queues a fresh round for a dead delivery; another tenant cannot list, replay or delete", async () => {
      const { store, clock, tenant, other } = await setup();
      const { e, ids } = await endpointWithDeliveries(store, clock, tenant.id, 2);
      const [delivered, dead] = ids as [string, string];
      const leases = await claimDeliveries(store);
      await store.recordDeliveryAttempt(leases.get(delivered)!, delivered, {
        outcome: "delivered",
        status: 200,
      });
      await store.recordDeliveryAttempt(leases.get(dead)!, dead, {
        outcome: "dead",
        status: 500,
        error: httpError(500),
      });
      const theirs = await endpoint(store, other.id);
      assert.equal(await store.listWebhookDeliveries(other.id, e.id, { limit: 10 }), null);
      await rejectsCode(store.replayWebhookDelivery(other.id, e.id, dead), "WEBHOOK_ENDPOINT_NOT_FOUND");
      await rejectsCode(store.replayWebhookDelivery(other.id, theirs.id, dead), "DELIVERY_NOT_FOUND");
      assert.equal(await store.deleteWebhookEndpoint(other.id, e.id), false);
      assert.equal((await deliveriesOf(store, tenant.id, e.id))!.length, 2);
      await rejectsCode(store.replayWebhookDelivery(tenant.id, e.id, delivered), "DELIVERY_NOT_REPLAYABLE");
      const replayed = await store.replayWebhookDelivery(tenant.id, e.id, dead);
      assert.deepEqual(
        [replayed.state, replayed.attempts, replayed.roundAttempts, replayed.nextAttemptAt],
        ["pending", 1, 0, clock.now()],
      );
      const again = await claimDeliveries(store);
      assert.deepEqual([...again.keys()], [dead], "one fresh attempt is queued, due now");
      await store.recordDeliveryAttempt(again.get(dead)!, dead, { outcome: "delivered", status: 200 });
      assert.deepEqual(
        [(await deliveryRow(store, dead)).state, (await deliveryRow(store, dead)).attempts],
        ["delivered", 2],
      );
      await store.close();
    });

    test("an event sink's delivery waits while an earlier one of the same sink and task is pending; scopes keep sinks apart", async () => {
      const { store, clock, tenant } = await setup();
      const sink = await store.createWebhookEndpoint({
        tenantId: tenant.id,
        url: "redis://example.com:6379",
        kind: "redis",
        target: "events",
        events: null,
        secret: "sealed-url",
      });
      assert.deepEqual([sink.kind, sink.target], ["redis", "events"]);
      const hook = await endpoint(store, tenant.id);
      const { task } = await submit(store, tenant.id);
      clock.advance(1);
      const { task: otherTask } = await submit(store, tenant.id);
      const leases = new Map<string, Lease>();
      for (const it of await store.claim("w", 50, 30_000)) {
        const lease = { itemId: it.id, owner: "w" };
        if (it.kind === "advance" && it.payload.taskId === task.id) {
          await store.beginAdvance(lease, task.id);
          await store.finishAdvance(lease, task.id, { kind: "succeeded", output: null });
        } else if (it.kind === "deliver") leases.set(String(it.payload.deliveryId), lease);
        else await store.complete(lease);
      }
      for (const [id, lease] of await claimDeliveries(store)) leases.set(id, lease);
      const sinkLog = (await store.listWebhookDeliveries(tenant.id, sink.id, { limit: 50 }, "sinks"))!
        .deliveries;
      const mine = sinkLog.filter((d) => d.taskId === task.id).sort((a, b) => a.eventSeq - b.eventSeq);
      const [created, running, succeeded] = mine as [
        WebhookDeliveryRow,
        WebhookDeliveryRow,
        WebhookDeliveryRow,
      ];
      assert.deepEqual(
        mine.map((d) => d.eventType),
        ["task.created", "task.running", "task.succeeded"],
      );
      assert.equal(await store.earlierPendingDelivery(created.id), null);
      // The first is due now (it may be in flight): look again a little later, not at once.
      assert.equal(await store.earlierPendingDelivery(running.id), clock.now() + SINK_TURN_WAIT_MS);
      assert.equal(await store.earlierPendingDelivery(succeeded.id), clock.now() + SINK_TURN_WAIT_MS);
      const otherFirst = sinkLog.find((d) => d.taskId === otherTask.id)!;
      assert.equal(await store.earlierPendingDelivery(otherFirst.id), null, "another task is not held back");
      const hookRunning = (await deliveriesOf(store, tenant.id, hook.id))!.find(
        (d) => d.taskId === task.id && d.eventType === "task.running",
      )!;
      assert.ok(hookRunning);

      // The first retries in 5 s: the second waits until then, its work item deferred uncounted.
      await store.recordDeliveryAttempt(leases.get(created.id)!, created.id, {
        outcome: "retry",
        status: null,
        error: httpError(503),
        nextAttemptAt: clock.now() + 5000,
      });
      const until = await store.earlierPendingDelivery(running.id);
      assert.equal(until, clock.now() + 5000);
      await store.deferDelivery(leases.get(running.id)!, until!);
      assert.equal((await deliveryRow(store, running.id)).attempts, 0);
      clock.advance(4999);
      assert.ok(!(await claimDeliveries(store)).has(running.id), "not before the earlier one's retry");
      clock.advance(1);
      const due = await claimDeliveries(store);
      assert.ok(due.has(running.id) && due.has(created.id));
      await store.recordDeliveryAttempt(due.get(created.id)!, created.id, {
        outcome: "delivered",
        status: null,
      });
      assert.equal(await store.earlierPendingDelivery(running.id), null);
      assert.equal(
        await store.earlierPendingDelivery(succeeded.id),
        clock.now() + SINK_TURN_WAIT_MS,
        "still behind the second",
      );

      // Webhook routes never see a sink, nor sink routes a webhook.
      assert.deepEqual(
        (await store.listWebhookEndpoints(tenant.id)).map((e) => e.id),
        [hook.id],
      );
      assert.deepEqual(
        (await store.listWebhookEndpoints(tenant.id, "sinks")).map((e) => e.id),
        [sink.id],
      );
      assert.equal(await store.listWebhookDeliveries(tenant.id, sink.id, { limit: 1 }), null);
      assert.equal(await store.deleteWebhookEndpoint(tenant.id, sink.id), false);
      assert.equal(await store.deleteWebhookEndpoint(tenant.id, hook.id, "sinks"), false);
      await rejectsCode(
        store.replayWebhookDelivery(tenant.id, sink.id, created.id),
        "WEBHOOK_ENDPOINT_NOT_FOUND",
      );
      await rejectsCode(
        store.replayWebhookDelivery(tenant.id, hook.id, hookRunning.id, "sinks"),
        "EVENT_SINK_NOT_FOUND",
      );
      assert.equal(await store.deleteWebhookEndpoint(tenant.id, sink.id, "sinks"), true);
      await store.close();
    });

    test("refused webhooks are counted per source, code and minute, listed newest first and pruned by minute", async () => {
      const { clock, store } = await setup();
      const refuse = (
        source: string,
        code: string,
        requestId: string,
        remoteAddress: string | null = "10.0.0.1",
      ) => store.recordWebhookRefusal({ source, code, at: clock.now(), requestId, remoteAddress });
      const start = clock.now();
      await refuse("stripe", "SIGNATURE_INVALID", "r1");
      clock.advance(10_000);
      await refuse("stripe", "SIGNATURE_INVALID", "r2", "10.0.0.2");
      await refuse("stripe", "TIMESTAMP_OUT_OF_TOLERANCE", "r3");
      clock.advance(60_000);
      await refuse("stripe", "SIGNATURE_INVALID", "r4", null);
      await refuse("github", "SIGNATURE_MISSING", "r5");

      const all = await store.listWebhookRefusals({ limit: 10 });
      assert.deepEqual(
        all.refusals.map((r) => [r.source, r.code, r.count, r.minute - start]),
        [
          ["github", "SIGNATURE_MISSING", 1, 60_000],
          ["stripe", "SIGNATURE_INVALID", 1, 60_000],
          ["stripe", "TIMESTAMP_OUT_OF_TOLERANCE", 1, 0],
          ["stripe", "SIGNATURE_INVALID", 2, 0],
        ],
      );
      const first = all.refusals[3]!;
      assert.deepEqual(
        [first.firstAt - start, first.lastAt - start, first.lastRequestId, first.lastRemoteAddress],
        [0, 10_000, "r2", "10.0.0.2"],
        "a bucket keeps its first and last time and its last request",
      );
      assert.equal(all.refusals[1]!.lastRemoteAddress, null);

      const page = await store.listWebhookRefusals({ source: "stripe", limit: 2 });
      assert.equal(page.refusals.length, 2);
      assert.ok(page.nextCursor);
      const rest = await store.listWebhookRefusals({ source: "stripe", limit: 2, cursor: page.nextCursor });
      assert.deepEqual(
        rest.refusals.map((r) => r.count),
        [2],
      );
      assert.equal(rest.nextCursor, null);

      assert.equal(await store.pruneWebhookRefusals(start + 60_000), 2, "the buckets of the first minute");
      assert.equal(await store.pruneWebhookRefusals(start + 60_000), 0);
      assert.equal((await store.listWebhookRefusals({ limit: 10 })).refusals.length, 2);
      await store.close();
    });

    test("queueStats counts pending items per kind and the oldest one due, in one read", async () => {
      const { clock, store, tenant } = await setup();
      await submit(store, tenant.id);
      await submit(store, tenant.id);
      await store.enqueue([
        {
          kind: "poll",
          tenantId: tenant.id,
          payload: { jobId: "j_later", attempt: 1 },
          runAt: clock.now() + 60_000,
          maxAttempts: 3,
        },
      ]);
      const due = clock.now();
      clock.advance(5_000);
      const stats = await store.queueStats(clock.now());
      const byKind = new Map(stats.map((s) => [s.kind, s]));
      assert.deepEqual(byKind.get("advance"), { kind: "advance", depth: 2, oldestDueAt: due });
      assert.deepEqual(byKind.get("poll"), { kind: "poll", depth: 1, oldestDueAt: null }, "not due yet");
      await claimOne(store);
      assert.equal(
        new Map((await store.queueStats(clock.now())).map((s) => [s.kind, s])).get("advance")?.depth,
        1,
        "a leased item is not pending",
      );
      await store.close();
    });

    test("files: a row per upload, one per (tenant, sha256), read and deleted only by its tenant, paged newest first", async () => {
      const { clock, store, tenant, other } = await setup();
      const file = (sha256: string, tenantId = tenant.id) => ({
        tenantId,
        filename: `${sha256}.txt`,
        contentType: "text/plain",
        size: 3,
        sha256,
        blobKey: `files/${tenantId}/${sha256}`,
        createdAt: clock.now(),
      });
      const a = await store.createFile(file("aa"));
      assert.equal(a.created, true);
      assert.match(a.file.id, /^file_/);
      assert.deepEqual(await store.getFile(tenant.id, a.file.id), a.file);
      const again = await store.createFile({ ...file("aa"), filename: "other.txt", blobKey: "files/x/y" });
      assert.deepEqual(again, { file: a.file, created: false }, "the same bytes answer the first file");
      const theirs = await store.createFile(file("aa", other.id));
      assert.equal(theirs.created, true, "another tenant's same bytes are its own file");
      assert.equal(await store.getFile(other.id, a.file.id), null);
      assert.equal(await store.deleteFile(other.id, a.file.id), null);
      const ids = [a.file.id];
      for (const sha of ["bb", "cc", "dd"]) ids.unshift((await store.createFile(file(sha))).file.id);
      const first = await store.listFiles(tenant.id, { limit: 3 });
      assert.deepEqual(
        first.files.map((f) => f.id),
        ids.slice(0, 3),
      );
      assert.ok(first.nextCursor);
      const second = await store.listFiles(tenant.id, { limit: 3, cursor: first.nextCursor });
      assert.deepEqual(
        second.files.map((f) => f.id),
        ids.slice(3),
      );
      assert.equal(second.nextCursor, null);
      assert.deepEqual(await store.deleteFile(tenant.id, a.file.id), a.file);
      assert.equal(await store.getFile(tenant.id, a.file.id), null);
      assert.equal(await store.deleteFile(tenant.id, a.file.id), null);
      assert.equal((await store.getFile(other.id, theirs.file.id))?.sha256, "aa");
      await store.close();
    });

    test("files: namedBlobKeys answers which listed keys a row names, any tenant's", async () => {
      const { clock, store, tenant, other } = await setup();
      const file = (sha256: string, tenantId: string) => ({
        tenantId,
        filename: null,
        contentType: "text/plain",
        size: 1,
        sha256,
        blobKey: `files/${tenantId}/${sha256}`,
        createdAt: clock.now(),
      });
      await store.createFile(file("n1", tenant.id));
      await store.createFile(file("n2", other.id));
      assert.deepEqual(await store.namedBlobKeys([]), new Set());
      assert.deepEqual(
        await store.namedBlobKeys([
          `files/${tenant.id}/n1`,
          `files/${other.id}/n2`,
          `files/${tenant.id}/orphan`,
        ]),
        new Set([`files/${tenant.id}/n1`, `files/${other.id}/n2`]),
      );
      await store.close();
    });

    test("files: the storage quota counts the tenant's files in the insert's transaction; the tenant's own quota wins", async () => {
      const { clock, store, tenant, other } = await setup();
      const file = (sha256: string, size: number, tenantId = tenant.id) => ({
        tenantId,
        filename: null,
        contentType: "text/plain",
        size,
        sha256,
        blobKey: `files/${tenantId}/${sha256}`,
        createdAt: clock.now(),
      });
      const quota = { storageQuotaBytes: 100 };
      assert.equal((await store.createFile(file("q1", 60), quota)).created, true);
      await assert.rejects(store.createFile(file("q2", 41), quota), (err: LonghaulError) => {
        assert.equal(err.code, "STORAGE_QUOTA_EXCEEDED");
        assert.equal(err.details?.quota_bytes, 100);
        return true;
      });
      assert.equal(
        (await store.listFiles(tenant.id, { limit: 10 })).files.length,
        1,
        "no row for the refused file",
      );
      assert.equal(
        (await store.createFile(file("q1", 60), quota)).created,
        false,
        "the same bytes again cost nothing",
      );
      assert.equal(
        (await store.createFile(file("q3", 40), quota)).created,
        true,
        "exactly at the quota is allowed",
      );
      assert.equal(
        (await store.createFile(file("q2", 41, other.id), quota)).created,
        true,
        "each tenant counts its own",
      );
      await store.updateTenant(tenant.id, { quotas: { storage_quota_bytes: 1000 } });
      assert.equal(
        (await store.createFile(file("q4", 500), quota)).created,
        true,
        "the tenant's own quota wins",
      );
      await store.updateTenant(tenant.id, { quotas: { storage_quota_bytes: 0 } });
      assert.equal(
        (await store.createFile(file("q5", 10_000), quota)).created,
        true,
        "0 lifts the tenant's cap",
      );
      await store.close();
    });
  });
}
