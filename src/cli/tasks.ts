import { parseArgs } from "node:util";
import { LonghaulError } from "../core/errors.ts";
import { isTaskStatus } from "../core/task-state.ts";
import { openStore } from "../store/open-store.ts";
import { DEV_TENANT_ID } from "./dev.ts";

const usage = `longhaul tasks list [--tenant ID] [--status S] [--type T] [--limit N]
longhaul tasks show TASK_ID [--tenant ID]
longhaul tasks cancel TASK_ID [--tenant ID]
(--tenant defaults to the development tenant)`;

/** `longhaul tasks …`: an operator's view of one tenant's tasks, on the store of LONGHAUL_DATABASE_URL. */
export async function tasksCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      tenant: { type: "string", default: DEV_TENANT_ID },
      status: { type: "string" },
      type: { type: "string" },
      limit: { type: "string", default: "20" },
    },
  });
  const [sub, id] = positionals;
  const store = await openStore(process.env.LONGHAUL_DATABASE_URL ?? "sqlite:.longhaul/longhaul.db");
  try {
    await store.migrate();
    const tenant = values.tenant;
    if (sub === "list") {
      if (values.status !== undefined && !isTaskStatus(values.status)) {
        throw new LonghaulError("VALIDATION_FAILED", `Unknown status "${values.status}".`);
      }
      const page = await store.listTasks(tenant, {
        status: values.status,
        type: values.type,
        limit: Math.min(200, Math.max(1, Number(values.limit) || 20)),
      });
      for (const t of page.tasks) {
        console.log(`${t.id}\t${t.type}\t${t.status}\t${new Date(t.createdAt).toISOString()}`);
      }
      if (page.nextCursor) console.log(`… more (the oldest shown is ${page.nextCursor})`);
    } else if (sub === "show" && id) {
      const d = await store.getTask(tenant, id);
      if (!d) throw new LonghaulError("TASK_NOT_FOUND", `No task ${id} for tenant ${tenant}.`);
      console.log(JSON.stringify(d, null, 2));
    } else if (sub === "cancel" && id) {
      const t = await store.cancelTask(tenant, id);
      console.log(`${t.id}\t${t.status}`);
    } else {
      console.log(usage);
    }
  } finally {
    await store.close();
  }
}
