import type { Registry } from "../core/registry.ts";
import type { TaskType } from "../core/task-type.ts";
import { listTaskTypes } from "../usecases/list-task-types.ts";
import { TaskTypeList } from "../wire/task-types.ts";
import type { Api } from "./api.ts";
import { operation } from "./openapi.ts";

/** `GET /v1/task-types`: the task types this node runs, with their input's JSON Schema where one can be derived. */
export function taskTypesRoutes(app: Api, taskTypes: Registry<TaskType>): void {
  const schema = operation("The registered task types, with the JSON Schema of their input", {
    response: { 200: TaskTypeList },
  });
  app.get("/v1/task-types", { schema }, async () => ({
    data: listTaskTypes({ taskTypes }).map((t) =>
      t.inputSchema ? { name: t.name, input_schema: t.inputSchema } : { name: t.name },
    ),
  }));
}
