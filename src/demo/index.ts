import type { TaskType } from "../core/task-type.ts";
import { fileChunkSink } from "./chunk-sink.ts";
import { demoEcho } from "./demo-echo.ts";
import { ragSummary } from "./rag-summary.ts";

/** The demo task types `longhaul dev` registers (DESIGN §7). Chunks go under `dataDir/chunks`. */
export function demoTaskTypes(dataDir: string): TaskType[] {
  return [demoEcho, ragSummary(fileChunkSink(`${dataDir}/chunks`))];
}
