import { parseArgs } from "node:util";
import { openStore } from "../store/open-store.ts";
import { cancelTask } from "../usecases/cancel-task.ts";
import { getTask } from "../usecases/get-task.ts";
import { listTasks } from "../usecases/list-tasks.ts";
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
      const page = await listTasks(
        { tasks: store },
        { tenantId: tenant, status: values.status, type: values.type, limit: Number(values.limit) || 20 },
      );
      for (const t of page.tasks) {
        console.log(`${t.id}\t${t.type}\t${t.status}\t${new Date(t.createdAt).toISOString()}`);
      }
      if (page.nextCursor) console.log(`… more (the oldest shown is ${page.nextCursor})`);
    } else if (sub === "show" && id) {
      const { detail } = await getTask({ tasks: store, waits: store }, { tenantId: tenant, taskId: id });
      console.log(JSON.stringify(detail, null, 2));
    } else if (sub === "cancel" && id) {
      const t = await cancelTask({ tasks: store }, { tenantId: tenant, taskId: id });
      console.log(`${t.id}\t${t.status}`);
    } else {
      console.log(usage);
    }
  } finally {
    await store.close();
  }
}
