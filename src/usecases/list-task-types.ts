import { inputJsonSchema, type JsonSchema } from "../core/input-json-schema.ts";
import type { TaskType } from "../core/task-type.ts";

export interface TaskTypeInfo {
  name: string;
  /** The JSON Schema of the input a client submits; absent when the type's schema cannot say. */
  inputSchema?: JsonSchema | undefined;
}

/** The task types this node knows, by name, each with its input's JSON Schema where one can be derived. */
export function listTaskTypes(d: {
  taskTypes: { names(): string[]; get(name: string): TaskType };
}): TaskTypeInfo[] {
  return d.taskTypes
    .names()
    .sort()
    .map((name) => {
      const inputSchema = inputJsonSchema(d.taskTypes.get(name));
      return inputSchema ? { name, inputSchema } : { name };
    });
}
