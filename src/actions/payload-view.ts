import { LonghaulError } from "../core/errors.ts";
import { inlineValue, payloadRef } from "../core/payload.ts";
import type { TaskDetail, TaskRow } from "../store/store.ts";
import type { CapabilityUrls } from "../tokens/capability-urls.ts";
import { loadPayload, type PayloadBlobs } from "../usecases/payloads.ts";

/**
 * How the API shows a stored value (ARCHITECTURE §4.10): the value, or, for one kept in the
 * blob store and not read back, `null` with a signed, expiring URL that serves it. `path` is
 * where the value is served (`payloadPath`).
 */
export type PayloadView = (stored: unknown, path: string) => { value: unknown; url?: string };

/** Where the API serves a task's input, its output, or a step's result. */
export const payloadPath = {
  input: (taskId: string) => `/v1/tasks/${encodeURIComponent(taskId)}/input`,
  output: (taskId: string) => `/v1/tasks/${encodeURIComponent(taskId)}/output`,
  step: (taskId: string, stepId: string) =>
    `/v1/tasks/${encodeURIComponent(taskId)}/steps/${encodeURIComponent(stepId)}/output`,
};

/**
 * The view of a list: nothing is read from the blob store; each value there is a URL, expiring
 * by `notAfter` at the latest (the reader's own read token's expiry).
 */
export function linkedView(urls: CapabilityUrls, task: TaskRow, notAfter?: number): PayloadView {
  return (stored, path) =>
    payloadRef(stored) === null
      ? { value: inlineValue(stored) }
      : { value: null, url: urls.payload(task.tenantId, task.id, path, notAfter) };
}

/**
 * The view of one task: its values in the blob store are read back, output first, then the
 * input, then the steps' results in order, while their bytes together stay within
 * `inlineResponseMaxBytes`; the rest are URLs. So the answer stays bounded however much the
 * task carries, and a value within the bound costs the caller no second request.
 */
export async function detailView(
  d: { urls: CapabilityUrls; payloads?: (PayloadBlobs & { inlineResponseMaxBytes: number }) | undefined },
  detail: TaskDetail,
  notAfter?: number,
): Promise<PayloadView> {
  const read = new Map<unknown, unknown>();
  let budget = d.payloads?.inlineResponseMaxBytes ?? 0;
  const values = [detail.task.output, detail.task.input, ...detail.steps.map((s) => s.output)];
  for (const stored of values) {
    const ref = payloadRef(stored);
    if (ref === null || ref.size > budget || read.has(stored)) continue;
    try {
      read.set(stored, await loadPayload(d.payloads?.blobs, detail.task.tenantId, stored));
      budget -= ref.size;
    } catch (err) {
      // The task is still shown: the value's link answers what is wrong with its bytes.
      if (!(err instanceof LonghaulError && err.code === "PAYLOAD_UNREADABLE")) throw err;
    }
  }
  const linked = linkedView(d.urls, detail.task, notAfter);
  return (stored, path) => (read.has(stored) ? { value: read.get(stored) } : linked(stored, path));
}
