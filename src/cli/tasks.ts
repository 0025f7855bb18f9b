import { taskDetail, taskSummary } from "../actions/serialize.ts";
import { systemClock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import { metaValueAt } from "../core/sealed-at.ts";
import { secretBoxFrom } from "../secrets/secret-box.ts";
import type { Store, TaskDetail } from "../store/store.ts";
import { CapabilityUrls } from "../tokens/capability-urls.ts";
import { generateTokenKey, Keyring, keyringFromConfig, TOKEN_KEYS_META_KEY } from "../tokens/keyring.ts";
import { cancelTask } from "../usecases/cancel-task.ts";
import { getTask } from "../usecases/get-task.ts";
import { listTasks } from "../usecases/list-tasks.ts";
import { rerunTask } from "../usecases/rerun-task.ts";
import { readConfig } from "./config.ts";
import { databaseUrl, openExistingStore, openMigratedStore } from "./store.ts";

// `longhaul tasks …`: an operator's view of one tenant's tasks. `list` and `show` only read,
// and print what the API answers (src/actions/serialize.ts), snake_case as on the wire.

interface TaskOptions {
  tenant: string;
  databaseUrl?: string;
}

export async function tasksList(
  o: TaskOptions & { status?: string; type?: string; limit: number; json?: boolean },
): Promise<void> {
  const store = await openExistingStore(databaseUrl(o.databaseUrl), { migrated: true });
  try {
    const page = await listTasks(
      { tasks: store },
      { tenantId: o.tenant, status: o.status, type: o.type, limit: o.limit },
    );
    if (o.json) {
      // The answer of `GET /v1/tasks`.
      console.log(
        JSON.stringify(
          { data: page.tasks.map((t) => taskSummary(t)), next_cursor: page.nextCursor },
          null,
          2,
        ),
      );
      return;
    }
    for (const t of page.tasks) {
      console.log(`${t.id}\t${t.type}\t${t.status}\t${new Date(t.createdAt).toISOString()}`);
    }
    if (page.nextCursor) console.log(`… more (the oldest shown is ${page.nextCursor})`);
  } finally {
    await store.close();
  }
}

/** The task as `GET /v1/tasks/:id` answers it, with a waiting step's callback and approval links. */
export async function tasksShow(id: string, o: TaskOptions & { config?: string }): Promise<void> {
  const store = await openExistingStore(databaseUrl(o.databaseUrl), { migrated: true });
  try {
    const { detail, decisions, notifications } = await getTask(
      { tasks: store, waits: store, notifications: store },
      { tenantId: o.tenant, taskId: id },
    );
    const urls = handsOutLinks(detail) ? await capabilityUrls(store, o.config) : unusedUrls();
    console.log(JSON.stringify(taskDetail(detail, { urls, decisions, notifications }), null, 2));
  } finally {
    await store.close();
  }
}

export async function tasksCancel(id: string, o: TaskOptions): Promise<void> {
  const store = await openMigratedStore(databaseUrl(o.databaseUrl));
  try {
    const t = await cancelTask({ tasks: store }, { tenantId: o.tenant, taskId: id });
    console.log(`${t.id}\t${t.status}`);
  } finally {
    await store.close();
  }
}

/**
 * Re-runs a failed, canceled or timed-out task as a new task and prints the new task's id, its
 * status and the id it re-runs (or, with --json, the answer of `POST /v1/tasks/:id/rerun`).
 * The task types live in the application's code, not here: a re-run of a type the server no
 * longer knows fails there with TASK_TYPE_UNKNOWN, as any such task does.
 */
export async function tasksRerun(
  id: string,
  o: TaskOptions & { from?: string; clientRequestId?: string; json?: boolean },
): Promise<void> {
  const store = await openMigratedStore(databaseUrl(o.databaseUrl));
  try {
    const r = await rerunTask(
      { tasks: store },
      { tenantId: o.tenant, taskId: id, from: o.from, clientRequestId: o.clientRequestId ?? null },
    );
    if (o.json) {
      console.log(
        JSON.stringify(
          {
            task_id: r.task.id,
            status: r.task.status,
            rerun_of: id,
            created: r.created,
            reused_steps: r.reusedSteps,
          },
          null,
          2,
        ),
      );
    } else console.log(`${r.task.id}\t${r.task.status}\t${id}`);
  } finally {
    await store.close();
  }
}

/** Whether the task's JSON holds capability links: a waiting callback or approval step. */
const handsOutLinks = (d: TaskDetail) =>
  d.steps.some((s) => s.status === "waiting" && (s.kind === "callback" || s.kind === "approval"));

/**
 * The links the server hands out for this store: its token keys (the config's, else those kept
 * in the store, opened with LONGHAUL_SECRET_KEY(S)) under its public URL (the config's, else
 * `dev`'s default). Read only; CONFIG_INVALID when no server has made keys yet.
 */
async function capabilityUrls(store: Store, configFlag: string | undefined): Promise<CapabilityUrls> {
  const config = await readConfig(configFlag);
  const secrets = secretBoxFrom(undefined);
  const at = metaValueAt(TOKEN_KEYS_META_KEY);
  const keyring = await keyringFromConfig(
    config.tokens?.keys ? { keys: config.tokens.keys } : undefined,
    async () => {
      const stored = await store.getMeta(TOKEN_KEYS_META_KEY);
      return stored === null ? null : secrets.open(stored, at);
    },
    async () => {
      throw new LonghaulError(
        "CONFIG_INVALID",
        "The store holds no token keys yet, so no link can be shown; start the server once, or list tokens.keys in the config.",
      );
    },
  );
  const publicUrl = (config.public_url ?? `http://127.0.0.1:${process.env.LONGHAUL_PORT || 8787}`).replace(
    /\/$/,
    "",
  );
  return new CapabilityUrls(
    keyring,
    () => publicUrl,
    (config.tokens?.ttl_s ?? 48 * 3600) * 1000,
    systemClock,
  );
}

/** For a task without links: the serializer takes URLs it will not ask for. */
const unusedUrls = () => new CapabilityUrls(Keyring.from([generateTokenKey()]), () => "", 0, systemClock);
