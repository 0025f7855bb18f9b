import type { TaskType } from "../core/task-type.ts";
import { graphTask } from "../graph/graph-task.ts";
import { demoApproval } from "./demo-approval.ts";
import { demoCallback } from "./demo-callback.ts";
import { demoEcho } from "./demo-echo.ts";
import { demoFile } from "./demo-file.ts";
import { ragSummary } from "./rag-summary.ts";

/**
 * The task types `longhaul dev` registers (ARCHITECTURE §7), and `graph`, which runs declarative
 * graphs. `rag_summary` indexes its chunks in the tenant's search index (`ctx.index`);
 * `_dataDir`, where they once went as files, is no longer read and is kept so callers compile.
 */
export function demoTaskTypes(_dataDir?: string): TaskType[] {
  return [demoEcho, demoCallback, demoApproval, demoFile, ragSummary(), graphTask];
}
