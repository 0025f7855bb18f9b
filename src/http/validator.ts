import { TypeBoxValidatorCompiler } from "@fastify/type-provider-typebox";
import type { FastifySchemaCompiler } from "fastify";
import type { TSchema } from "typebox";

/**
 * Requests are checked against the routes' TypeBox schemas. The query string, path and headers
 * are text, so their numbers are converted first; a JSON body is taken as sent (`"60"` is not
 * a number). A request without a body (undefined, or null for an empty one) is checked as `{}`, so a body whose fields are all
 * optional may be left out and a missing required field is named.
 */
export const validatorCompiler: FastifySchemaCompiler<TSchema> = (route) => {
  const check = TypeBoxValidatorCompiler(route);
  if (route.httpPart !== "body") return check;
  return (value) => check(value === undefined || value === null ? {} : value);
};
