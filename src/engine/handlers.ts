import type { LogLine } from "../core/task-log.ts";
import type { WorkItemOf, WorkKind } from "../core/work-item.ts";
import type { Lease } from "../store/store.ts";
import { advanceTask, type TaskLogSubject } from "../usecases/advance-task.ts";
import { applyJobEvent } from "../usecases/apply-job-event.ts";
import { cancelProviderJob } from "../usecases/cancel-provider-job.ts";
import { deliverWebhook } from "../usecases/deliver-webhook.ts";
import { dispatchJob } from "../usecases/dispatch-job.ts";
import { fireReminder, fireTimeout } from "../usecases/fire-timer.ts";
import { pollJob } from "../usecases/poll-job.ts";
import { runMaintenance } from "../usecases/run-maintenance.ts";
import { sendNotification } from "../usecases/send-notification.ts";
import type { EngineDeps } from "./deps.ts";

type Handlers = { [K in WorkKind]: (d: EngineDeps, item: WorkItemOf<K>, lease: Lease) => Promise<void> };

/**
 * One handler per kind of work: each calls its use case with the engine's store roles and the
 * item's payload, and logs what the use case says happened (a use case logs nothing itself).
 */
export const handlers: Handlers = {
  async advance(d, item, lease) {
    const onLog = (line: LogLine, who: TaskLogSubject) =>
      d.log[line.level]({ ...who, fields: line.fields ?? undefined }, line.message);
    const r = await advanceTask({ ...d, onLog }, { ...item.payload, lease, attempts: item.attempts });
    if (!("who" in r)) return;
    for (const kind of r.waits) d.metrics?.waits.inc({ kind: kind === "wait_event" ? "event" : kind });
    if (r.kind === "retry") d.log.warn({ ...r.who, error: r.error, delayMs: r.delayMs }, "task will retry");
    if (r.kind === "succeeded" || r.kind === "failed" || r.kind === "timed_out") {
      const labels = { type: r.who.type, status: r.kind };
      d.metrics?.tasksFinished.inc(labels);
      d.metrics?.taskSeconds.observe(labels, Math.max(0, d.clock.now() - r.createdAt) / 1000);
    }
    if (r.kind === "failed" || r.kind === "timed_out") {
      // Never the input: what failed, whose task it was, and why.
      const { taskId, tenantId, type } = r.who;
      d.log.warn(
        { taskId, tenantId, type, status: r.kind, code: r.error.code, message: r.error.message },
        "task failed",
      );
    }
  },

  async dispatch(d, item, lease) {
    const r = await dispatchJob(d, {
      ...item.payload,
      lease,
      attempts: item.attempts,
      maxAttempts: item.maxAttempts,
    });
    if (r.kind === "retrying" || (r.kind === "failed" && r.code === "PROVIDER_ERROR")) {
      d.metrics?.providerErrors.inc({ provider: r.provider, op: "create" });
    }
    if (r.kind === "retrying") {
      d.log.warn({ jobId: r.jobId, attempt: r.attempt, err: r.message }, "dispatch failed; will retry");
    }
    if (r.kind === "throttled") {
      d.log.info(
        { jobId: r.jobId, retryAt: new Date(r.retryAt).toISOString(), err: r.message },
        "provider rate limit; job parked",
      );
    }
  },

  async apply_event(d, item, lease) {
    const { inboxId } = item.payload;
    const r = await applyJobEvent(
      {
        inbox: d.store,
        queue: d.store,
        providers: d.providers,
        confirmSources: d.confirmSources,
        files: d.blobs,
      },
      { inboxId, lease },
    );
    if (r.kind === "applied") {
      d.log.debug({ inboxId, type: r.event.type, jobId: r.event.jobId, outcome: r.outcome }, "event applied");
    } else if (r.kind === "confirmed") {
      d.log.debug({ inboxId, type: r.event.type, jobId: r.event.jobId, answer: r.answer }, "event confirmed");
    }
  },

  async timeout(d, item, lease) {
    await fireTimeout(d, { ...item.payload, lease });
  },

  async reminder(d, item, lease) {
    await fireReminder(d, { ...item.payload, lease });
  },

  async cancel_job(d, item, lease) {
    const r = await cancelProviderJob(d, { ...item.payload, lease, attempts: item.attempts });
    if (r.kind !== "retrying") return;
    d.metrics?.providerErrors.inc({ provider: r.provider, op: "cancel" });
    if (r.dead) deadItem(d, item, r.message);
  },

  async poll(d, item, lease) {
    const r = await pollJob(d, { ...item.payload, lease, attempts: item.attempts });
    if (r.kind === "refused" || r.kind === "retrying") {
      d.metrics?.providerErrors.inc({ provider: r.provider, op: "poll" });
    }
    if (r.kind === "retrying" && r.dead) deadItem(d, item, r.message);
    if (r.kind === "refused") {
      d.log.warn(
        { jobId: r.jobId, err: r.message },
        "status poll refused; the job waits for its webhook or timeout",
      );
    } else if (r.kind === "polled" && r.moved) {
      d.log.info({ jobId: r.jobId, state: r.state }, "reconciler found a state the webhooks did not bring");
    }
  },

  async maintenance(d, _item, lease) {
    const pruned = await runMaintenance(d, { lease });
    if (pruned.inbox > 0) d.log.info({ pruned: pruned.inbox }, "pruned inbox events past the dedupe horizon");
    if (pruned.deliveries > 0) {
      d.log.info(
        { deliveries: pruned.deliveries },
        "pruned delivered webhook deliveries past their retention",
      );
    }
    if (pruned.signals > 0) d.log.info({ signals: pruned.signals }, "pruned signals past their retention");
    if (pruned.refusals > 0) {
      d.log.info({ refusals: pruned.refusals }, "pruned refused-webhook counts past their retention");
    }
    if (pruned.blobTemps > 0) {
      d.log.info({ blobTemps: pruned.blobTemps }, "removed temporary blob files a crashed write left");
    }
    if (pruned.blobOrphans > 0) {
      d.log.info(
        { blobOrphans: pruned.blobOrphans },
        "removed blobs no file or artifact names, left by a crash",
      );
    }
  },

  async deliver(d, item, lease) {
    const { deliveryId } = item.payload;
    const r = await deliverWebhook(
      {
        outbound: d.store,
        queue: d.store,
        clock: d.clock,
        settings: d.outbound,
        random: d.random,
        sinks: d.sinks,
      },
      { deliveryId, lease },
    );
    if (r.kind !== "attempted") return;
    const result = r.result;
    d.metrics?.outboundAttempts.inc({ outcome: result.outcome });
    if (result.outcome === "delivered") return;
    const line = { deliveryId, endpointId: r.endpointId, outcome: result.outcome, code: result.error.code };
    if (result.outcome === "retry") {
      d.log.info(line, "outbound webhook attempt failed");
    } else {
      // Given up: dead after its last attempt, or failed for good (the endpoint is gone).
      if (result.outcome === "dead") d.metrics?.outboundDead.inc({});
      d.log.warn(
        { ...line, status: result.status, message: result.error.message },
        "outbound webhook delivery dead",
      );
    }
  },

  async notify(d, item, lease) {
    const { notificationId } = item.payload;
    const r = await sendNotification(d, { notificationId, lease });
    if (r.kind !== "attempted") return;
    const { result } = r;
    if (result.outcome === "sent" || result.outcome === "skipped") return;
    const line = { notificationId, channel: r.channel, outcome: result.outcome, code: result.error.code };
    if (result.outcome === "retry") d.log.info(line, "approval message attempt failed");
    else d.log.warn({ ...line, message: result.error.message }, "approval message not sent");
  },
};

/**
 * A work item a use case gave back after its last attempt: dead-lettered, so counted and
 * logged at warn as the worker does for an item whose handler threw.
 */
export function deadItem(
  d: EngineDeps,
  item: { id: string; kind: string; attempts: number },
  error: string,
): void {
  d.metrics?.deadItems.inc({ kind: item.kind });
  d.log.warn(
    { item: item.id, kind: item.kind, attempts: item.attempts, error },
    "work item dead after its last attempt",
  );
}
