import { Type } from "typebox";
import { Json } from "./common.ts";

/** `GET /v1/task-types`: the registered task types. */
export const TaskTypeInfo = Type.Object({
  name: Type.String(),
  /** The JSON Schema of the input to submit; absent when the type's schema cannot give one. */
  input_schema: Type.Optional(Json),
});

export const TaskTypeList = Type.Object({ data: Type.Array(TaskTypeInfo) });
