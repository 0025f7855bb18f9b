import { Type } from "typebox";
import { READ_TOKEN_TTL_S } from "../core/read-scope.ts";
import { Text, Timestamp } from "./common.ts";

/** What a read token opens: one task, or the tasks submitted with one `user_id`. */
export const ReadScope = Type.Union([
  Type.Object({ task_id: Text(255, "This task only") }, { additionalProperties: false }),
  Type.Object(
    { user_id: Text(255, "The tasks submitted with this user_id") },
    { additionalProperties: false },
  ),
]);

/** `POST /v1/tokens`. */
export const ReadTokenBody = Type.Object(
  {
    scope: ReadScope,
    ttl: Type.Optional(
      Type.Integer({
        minimum: READ_TOKEN_TTL_S.min,
        maximum: READ_TOKEN_TTL_S.max,
        description: `Seconds the token is valid, from ${READ_TOKEN_TTL_S.min} to ${READ_TOKEN_TTL_S.max}; default ${READ_TOKEN_TTL_S.default}`,
      }),
    ),
  },
  { additionalProperties: false },
);

export const ReadTokenResult = Type.Object({
  token: Type.String({
    description:
      "A read-only bearer token: `?token=` or `Authorization: Bearer` on GET /v1/tasks/:id, GET /v1/events and GET /v1/events/ws",
  }),
  expires_at: Timestamp,
  scope: ReadScope,
});
