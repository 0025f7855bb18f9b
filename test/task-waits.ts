import assert from "node:assert/strict";
import { waitFor } from "./helpers.ts";
import type { Stack } from "./stack.ts";

// Submitting a task over HTTP and waiting for one of its steps, or for its end: what the
// wait tests share.

export const ended = new Set(["succeeded", "failed", "canceled", "timed_out"]);

export async function submit(stack: Stack, type: string, input: unknown = {}) {
  const r = await stack.api("/v1/tasks", { body: { type, input } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.task_id as string;
}
export const get = async (stack: Stack, id: string) => (await stack.api(`/v1/tasks/${id}`)).body;
export const waitingStep = (stack: Stack, id: string, stepId: string) =>
  waitFor(
    async () => {
      const s = (await get(stack, id)).steps.find((x: { id: string }) => x.id === stepId);
      return s?.status === "waiting" ? s : null;
    },
    10_000,
    `step ${stepId} of ${id} to wait`,
  );
export const end = (stack: Stack, id: string) =>
  waitFor(
    async () => {
      const t = await get(stack, id);
      return ended.has(t.status) ? t : null;
    },
    15_000,
    `task ${id} to end`,
  );
