import type { TaskType } from "./task-type.ts";

/** A JSON Schema document, as plain JSON. */
export type JsonSchema = Record<string, unknown>;

/**
 * The JSON Schema of what a client submits to a task type, where its schema can say:
 *
 * - a schema that implements Standard JSON Schema (`~standard.jsonSchema`, https://standardschema.dev/json-schema:
 *   zod 4.2 and later, arktype, valibot through its adapter) gives its input's schema;
 * - a TypeBox schema (it carries a `~kind`, or TypeBox 0.x's `Kind` symbol) is itself JSON
 *   Schema, so its own JSON is the answer.
 *
 * Anything else (no schema, only `validate`, a schema library that cannot say) is undefined, and
 * so is a conversion that throws or answers something that is not JSON: the type is listed
 * without a schema rather than failing the list. Computed once per task type.
 */
export function inputJsonSchema(type: TaskType): JsonSchema | undefined {
  if (!type.schema) return undefined;
  if (cache.has(type)) return cache.get(type);
  const found = derive(type.schema);
  cache.set(type, found);
  return found;
}

const cache = new WeakMap<TaskType, JsonSchema | undefined>();

interface StandardJsonSchemaProps {
  jsonSchema?: { input?: (o: { target: string }) => unknown };
}

function derive(schema: object): JsonSchema | undefined {
  const std = (schema as { "~standard"?: StandardJsonSchemaProps })["~standard"];
  const convert = std?.jsonSchema?.input;
  if (typeof convert === "function") {
    for (const target of ["draft-2020-12", "draft-07"]) {
      const out = attempt(() => convert.call(std?.jsonSchema, { target }));
      if (out) return out;
    }
  }
  const kind = Object.getOwnPropertyDescriptor(schema, "~kind")?.value;
  const legacyKind = (schema as Record<symbol, unknown>)[Symbol.for("TypeBox.Kind")];
  if (typeof kind === "string" || typeof legacyKind === "string") {
    return attempt(() => {
      const { "~standard": _std, ...rest } = schema as Record<string, unknown>;
      return rest;
    });
  }
  return undefined;
}

/** `fn`'s answer as plain JSON when it is a JSON object; undefined when it throws or is not one. */
function attempt(fn: () => unknown): JsonSchema | undefined {
  try {
    const out = fn();
    if (typeof out !== "object" || out === null || Array.isArray(out)) return undefined;
    const plain = JSON.parse(JSON.stringify(out)) as unknown;
    return typeof plain === "object" && plain !== null ? (plain as JsonSchema) : undefined;
  } catch {
    return undefined;
  }
}
