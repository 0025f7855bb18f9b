/** A JSON Schema as `GET /v1/task-types` gives it: plain JSON, any draft. */
export type Schema = { [k: string]: unknown };

const isSchema = (v: unknown): v is Schema => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * An input to start editing from: the schema's own example or default where it gives one,
 * else an object of its properties' examples and defaults, with a blank of the right type for
 * each required property that has none. Undefined when the schema suggests nothing.
 */
export function exampleFrom(schema: unknown, depth = 0): unknown {
  if (!isSchema(schema) || depth > 8) return undefined;
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  if ("example" in schema) return schema.example;
  if ("default" in schema) return schema.default;
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  for (const k of ["allOf", "anyOf", "oneOf"] as const) {
    const first = Array.isArray(schema[k]) ? (schema[k] as unknown[])[0] : undefined;
    if (first !== undefined) return exampleFrom(first, depth + 1);
  }
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  if (type === "object" || isSchema(schema.properties)) {
    const props = isSchema(schema.properties) ? schema.properties : {};
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    const out: Record<string, unknown> = {};
    for (const [name, p] of Object.entries(props)) {
      const v = exampleFrom(p, depth + 1);
      if (v !== undefined) out[name] = v;
      else if (required.has(name)) out[name] = blank(p);
    }
    return out;
  }
  return undefined;
}

function blank(p: unknown): unknown {
  const type = isSchema(p) ? (Array.isArray(p.type) ? p.type[0] : p.type) : undefined;
  switch (type) {
    case "string":
      return "";
    case "number":
    case "integer":
      return isSchema(p) && typeof p.minimum === "number" ? p.minimum : 0;
    case "boolean":
      return false;
    case "array":
      return [];
    case "null":
      return null;
    default:
      return {};
  }
}
