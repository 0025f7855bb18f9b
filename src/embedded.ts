import type { Static, TSchema } from "typebox";
import { rerunAction } from "./actions/rerun.ts";
import { signalAction } from "./actions/signals.ts";
import {
  cancelAction,
  getTaskAction,
  submitAction,
  submitBatchAction,
  type TaskActionDeps,
} from "./actions/tasks.ts";
import { hashApiKey, newApiKey } from "./core/api-keys.ts";
import { LonghaulError } from "./core/errors.ts";
import { readJson } from "./core/json-input.ts";
import { schemaErrorFormatter } from "./http/error-handler.ts";
import { loadValidation, validatorCompiler } from "./http/validator.ts";
import type { Store } from "./store/store.ts";
import { SignalBody, type SignalResult } from "./wire/events.ts";
import { RerunBody, type RerunResult } from "./wire/rerun.ts";
import {
  type CancelResult,
  SubmitBatchBody,
  type SubmitBatchResult,
  SubmitBody,
  type SubmitResult,
  type TaskDetail,
} from "./wire/tasks.ts";

// The embedded calls of `createLonghaul` (`lh.submit`, `lh.submitBatch`, `lh.signal`, `lh.get`, `lh.cancel`,
// `lh.rerun`):
// the same actions the HTTP routes call (src/actions), behind the routes' own input checks,
// for the tenant a call names or the default one (ARCHITECTURE §2).

/** `lh.submit`'s request: the body of `POST /v1/tasks`. */
export type SubmitRequest = Static<typeof SubmitBody>;
export type SubmitAnswer = Static<typeof SubmitResult>;
/** `lh.submitBatch`'s request: the body of `POST /v1/tasks/batch`. */
export type SubmitBatchRequest = Static<typeof SubmitBatchBody>;
export type SubmitBatchAnswer = Static<typeof SubmitBatchResult>;
/** `lh.signal`'s request: the body of `POST /v1/signals`. */
export type SignalRequest = Static<typeof SignalBody>;
export type SignalAnswer = Static<typeof SignalResult>;
export type CancelAnswer = Static<typeof CancelResult>;
/** `lh.rerun`'s request: the body of `POST /v1/tasks/:id/rerun`. */
export type RerunRequest = Static<typeof RerunBody>;
export type RerunAnswer = Static<typeof RerunResult>;
/** `lh.get`'s answer: the body of `GET /v1/tasks/:id`, with its steps, jobs and links. */
export type TaskAnswer = Static<typeof TaskDetail>;

/** The tenant embedded calls act for when `tenant` is not set and the store holds none. */
export const DEFAULT_TENANT_ID = "tn_default";

/** The calls an embedding program makes without HTTP; a call without a tenant id acts for the default tenant. */
export interface EmbeddedCalls {
  /**
   * Submits a task as `POST /v1/tasks` does, with the same checks and errors (LonghaulError:
   * VALIDATION_FAILED naming the field, TASK_TYPE_UNKNOWN, QUOTA_EXCEEDED, …). Without a
   * tenant id, the default tenant (see `LonghaulOptions.tenant`).
   */
  submit(request: SubmitRequest): Promise<SubmitAnswer>;
  submit(tenantId: string | undefined, request: SubmitRequest): Promise<SubmitAnswer>;
  /**
   * Submits 1 to 1,000 tasks all or nothing, as `POST /v1/tasks/batch` does: one bad item
   * refuses the batch (VALIDATION_FAILED, `param` naming `tasks[i]…`) and nothing is stored.
   */
  submitBatch(request: SubmitBatchRequest): Promise<SubmitBatchAnswer>;
  submitBatch(tenantId: string | undefined, request: SubmitBatchRequest): Promise<SubmitBatchAnswer>;
  /** Sends a signal as `POST /v1/signals` does. */
  signal(request: SignalRequest): Promise<SignalAnswer>;
  signal(tenantId: string | undefined, request: SignalRequest): Promise<SignalAnswer>;
  /**
   * A task as `GET /v1/tasks/:id` answers it: status, output, steps with their jobs, and a
   * waiting step's callback or approval links. TASK_NOT_FOUND for another tenant's.
   */
  get(taskId: string): Promise<TaskAnswer>;
  get(tenantId: string | undefined, taskId: string): Promise<TaskAnswer>;
  /** Cancels a task as `POST /v1/tasks/:id/cancel` does (TASK_NOT_FOUND for another tenant's). */
  cancel(taskId: string): Promise<CancelAnswer>;
  cancel(tenantId: string | undefined, taskId: string): Promise<CancelAnswer>;
  /**
   * Re-runs a failed, canceled or timed-out task as a new task, as `POST /v1/tasks/:id/rerun`
   * does (TASK_NOT_FOUND, TASK_NOT_RERUNNABLE, TASK_TYPE_UNKNOWN).
   */
  rerun(taskId: string, request?: RerunRequest): Promise<RerunAnswer>;
  rerun(tenantId: string | undefined, taskId: string, request?: RerunRequest): Promise<RerunAnswer>;
}

/** The embedded calls over `d`; `tenant` is the `tenant` option of `createLonghaul`. */
export function embeddedCalls(
  d: Omit<TaskActionDeps, "store" | "log"> & { store: Store; tenant?: string | undefined },
): EmbeddedCalls {
  let defaultTenant: Promise<string> | null = null;
  const tenantFor = async (tenantId: string | undefined): Promise<string> => {
    if (tenantId !== undefined) {
      if (!(await d.store.getTenant(tenantId)))
        throw new LonghaulError("TENANT_NOT_FOUND", `No tenant ${tenantId}.`);
      return tenantId;
    }
    defaultTenant ??= resolveDefaultTenant(d.store, d.tenant);
    // A failed lookup is not kept: the next call tries again.
    return defaultTenant.catch((err) => {
      defaultTenant = null;
      throw err;
    });
  };
  const checkSubmit = bodyCheck(SubmitBody, "/v1/tasks");
  const checkBatch = bodyCheck(SubmitBatchBody, "/v1/tasks/batch");
  const checkSignal = bodyCheck(SignalBody, "/v1/signals");
  const checkRerun = bodyCheck(RerunBody, "/v1/tasks/:id/rerun");
  const args = <T>(a: string | undefined | T, b: T | undefined): [string | undefined, T] =>
    b === undefined ? [undefined, a as T] : [a as string | undefined, b];
  const named = (taskId: unknown, what: string): string => {
    if (typeof taskId !== "string" || taskId === "")
      throw new LonghaulError("VALIDATION_FAILED", `Name the task to ${what}: taskId is empty.`);
    return taskId;
  };
  return {
    async submit(a: string | undefined | SubmitRequest, b?: SubmitRequest) {
      const [tenant, request] = args(a, b);
      const body = await checkSubmit(request);
      return (await submitAction(d, await tenantFor(tenant), body)).body;
    },
    async submitBatch(a: string | undefined | SubmitBatchRequest, b?: SubmitBatchRequest) {
      const [tenant, request] = args(a, b);
      const body = await checkBatch(request);
      return submitBatchAction(d, await tenantFor(tenant), body);
    },
    async signal(a: string | undefined | SignalRequest, b?: SignalRequest) {
      const [tenant, request] = args(a, b);
      const body = await checkSignal(request);
      return (await signalAction(d, await tenantFor(tenant), body)).body;
    },
    async get(a: string | undefined, b?: string) {
      const [tenant, taskId] = args(a, b);
      return getTaskAction(d, await tenantFor(tenant), named(taskId, "read"));
    },
    async cancel(a: string | undefined, b?: string) {
      const [tenant, taskId] = args(a, b);
      return cancelAction(d, await tenantFor(tenant), named(taskId, "cancel"));
    },
    async rerun(a: string | undefined, b?: string | RerunRequest, c?: RerunRequest) {
      // (taskId, request?) or (tenantId, taskId, request?): a string second argument is the task.
      const [tenant, taskId, request] = typeof b === "string" ? [a, b, c] : [undefined, a, b];
      const body = await checkRerun(request ?? {});
      return (await rerunAction(d, await tenantFor(tenant), named(taskId, "re-run"), body)).body;
    },
  } as EmbeddedCalls;
}

/**
 * The default tenant of embedded calls: the `tenant` option (created when missing), else the
 * store's only tenant, else a new `tn_default`. Several tenants and no option: CONFIG_INVALID.
 */
async function resolveDefaultTenant(store: Store, configured: string | undefined): Promise<string> {
  // Its key is thrown away: an embedded tenant is reached through these calls, not over HTTP,
  // until an admin adds a key (`longhaul tenants rotate-key`).
  const ensure = async (id: string, name: string) =>
    (await store.ensureTenant({ id, name, keyHash: hashApiKey(newApiKey()) })).id;
  if (configured !== undefined) {
    return (await store.getTenant(configured))?.id ?? ensure(configured, configured);
  }
  const all = await store.listTenants();
  if (all.length === 1) return all[0]!.id;
  if (all.length === 0) return ensure(DEFAULT_TENANT_ID, "default");
  throw new LonghaulError(
    "CONFIG_INVALID",
    `The store holds ${all.length} tenants: pass the tenant id to submit, signal and cancel, or set the tenant option.`,
  );
}

/**
 * JSON.stringify's replacer for embedded calls: NaN and ±Infinity would be stored as `null`, so
 * they are refused, as a body's number beyond a double's range is (VALIDATION_FAILED).
 */
function finiteOnly(_key: string, v: unknown): unknown {
  if (typeof v === "number" && !Number.isFinite(v)) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `The request holds ${v}, which JSON cannot carry (it would be stored as null); send it as a string.`,
    );
  }
  return v;
}

/**
 * The HTTP route's own checks, for embedded calls: the request goes through JSON as a body
 * would (the same depth cap and refused keys, and what is stored is what JSON keeps; a number
 * JSON cannot carry is refused), then its TypeBox schema, with the same messages.
 */
function bodyCheck<S extends TSchema>(schema: S, url: string): (value: unknown) => Promise<Static<S>> {
  const check = validatorCompiler({ schema, httpPart: "body", method: "POST", url });
  return async (value) => {
    let text: string | undefined;
    try {
      text = JSON.stringify(value, finiteOnly);
    } catch (err) {
      if (err instanceof LonghaulError) throw err;
      throw new LonghaulError("VALIDATION_FAILED", `The request is not JSON: ${(err as Error).message}`);
    }
    const read = text === undefined ? { ok: true as const, value: undefined } : readJson(text, "The request");
    if (!read.ok) throw read.error;
    await loadValidation();
    const r = check(read.value) as { value?: unknown; error?: unknown };
    if (r.error) {
      const err = schemaErrorFormatter(r.error as Parameters<typeof schemaErrorFormatter>[0], "body");
      throw new LonghaulError("VALIDATION_FAILED", err.message);
    }
    return r.value as Static<S>;
  };
}
