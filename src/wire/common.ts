import { type TSchema, Type } from "typebox";

/** A value or null: most optional facts travel as an explicit null on the wire. */
export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

/** A timestamp as ISO 8601 (UTC). */
export const Timestamp = Type.String({ description: "ISO 8601 timestamp (UTC)" });

/** No identifier or key holds a NUL: PostgreSQL text cannot even be queried with one. */
const NO_NUL = "^[^\\u0000]*$";

/** A caller-chosen string of 1 to `max` characters without NUL. */
export const Text = (max: number, description?: string) =>
  Type.String({ minLength: 1, maxLength: max, pattern: NO_NUL, ...(description ? { description } : {}) });

/** What the caller's JSON holds (task input and output, signal data): any JSON value, kept as sent. */
export const Json = Type.Unknown({ description: "Any JSON value" });

/** A failure as tasks, steps, jobs and deliveries record it. */
export const ErrorInfo = Type.Object(
  {
    code: Type.String(),
    message: Type.String(),
    name: Type.Optional(Type.String()),
    retriable: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: true },
);

/**
 * The body of every error answer: `{"error": {"code", "message", "param"?, "request_id"}}`,
 * the code from the one table.
 */
export const ErrorBody = Type.Object({
  error: Type.Object({
    code: Type.String(),
    message: Type.String(),
    param: Type.Optional(
      Type.String({
        description:
          "The request field at fault, as a dotted path inside its part, array indices in brackets (`input.text`, `input.items[2]`, `limit`), or the part itself (`body`, `query`, `path`, `headers`) when the whole of it is wrong.",
      }),
    ),
    request_id: Type.Optional(
      Type.String({ description: "The request's id, as its X-Request-Id response header answers it." }),
    ),
  }),
});

/** Every route's error answers, for its response schemas. */
export const errorResponses = { "4XX": ErrorBody, "5XX": ErrorBody };

/** A page of a list: `next_cursor` fetches the next one, null at the end. */
export const Page = <T extends TSchema>(item: T) =>
  Type.Object({ data: Type.Array(item), next_cursor: Nullable(Type.String()) });

/** `limit` of a list: 1 to 200, default 50. */
export const Limit = Type.Integer({ minimum: 1, maximum: 200, description: "1 to 200, default 50" });

export const IdParams = Type.Object({ id: Type.String() });

export const Health = Type.Object({
  status: Type.Enum(["ok", "degraded"]),
  store: Type.String({ description: "ok, or why the store is degraded" }),
});

/** A 204 answer: no body. */
export const NoContent = Type.Null({ description: "No content" });
