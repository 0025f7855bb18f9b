import type { FastifySchemaCompiler, FastifySchemaValidationError } from "fastify";
import type { TSchema } from "typebox";
import type { Compile } from "typebox/compile";
import type { Value } from "typebox/value";

type Result =
  | { value: unknown; error?: undefined }
  | { error: FastifySchemaValidationError[]; value?: undefined };

interface Checking {
  Compile: typeof Compile;
  Value: typeof Value;
}

// TypeBox's compiler and value conversion are several hundred modules: they are loaded when
// the first request to check arrives (`loadValidation`), not while the server starts.
let checking: Checking | null = null;
let loading: Promise<void> | null = null;

/** Loads what checking a request takes; resolves at once once it is loaded. */
export function loadValidation(): Promise<void> {
  loading ??= Promise.all([import("typebox/compile"), import("typebox/value")]).then(
    ([c, v]) => {
      checking = { Compile: c.Compile, Value: v.Value };
    },
    (err) => {
      loading = null;
      throw err;
    },
  );
  return loading;
}

/** Whether `loadValidation` has finished, so validators may run. */
export const validationLoaded = (): boolean => checking !== null;

/**
 * Requests are checked against the routes' TypeBox schemas. The query string, path and headers
 * are text, so their numbers are converted first; a JSON body is taken as sent (`"60"` is not
 * a number). A request without a body (undefined, or null for an empty one) is checked as `{}`, so a body whose fields are all
 * optional may be left out and a missing required field is named.
 *
 * A schema is compiled when its route first checks a request, and `loadValidation` must have
 * resolved by then: the server waits for it in a preValidation hook (src/http/server.ts).
 */
export const validatorCompiler: FastifySchemaCompiler<TSchema> = (route) => {
  let check: ((value: unknown) => Result) | null = null;
  return (value) => {
    check ??= compile(route.schema, route.httpPart);
    return check(value);
  };
};

/** What TypeBoxValidatorCompiler of @fastify/type-provider-typebox does, with a missing body as `{}`. */
function compile(schema: TSchema, httpPart: string | undefined): (value: unknown) => Result {
  if (!checking) throw new Error("A request was validated before loadValidation() resolved.");
  const { Compile, Value } = checking;
  const typeCheck = Compile(schema);
  const isBody = httpPart === "body";
  return (value) => {
    const converted = isBody
      ? value === undefined || value === null
        ? {}
        : value
      : Value.Convert(schema, value);
    if (typeCheck.Check(converted)) return { value: converted };
    return { error: typeCheck.Errors(converted) as unknown as FastifySchemaValidationError[] };
  };
}
