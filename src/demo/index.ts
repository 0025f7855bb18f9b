import type { TaskType } from "../core/task-type.ts";
import { graphTask } from "../graph/graph-task.ts";
import { fileChunkSink } from "./chunk-sink.ts";
import { demoApproval } from "./demo-approval.ts";
import { demoCallback } from "./demo-callback.ts";
import { demoEcho } from "./demo-echo.ts";
import { demoFile } from "./demo-file.ts";
import { ragSummary } from "./rag-summary.ts";

/**
 * The task types `longhaul dev` registers (ARCHITECTURE §7), and `graph`, which runs declarative
 * graphs. Chunks of `rag_summary` go under `dataDir/chunks`.
 */
export function demoTaskTypes(dataDir: string): TaskType[] {
  return [
    demoEcho,
    demoCallback,
    demoApproval,
    demoFile,
    ragSummary(fileChunkSink(`${dataDir}/chunks`)),
    graphTask,
  ];
}
