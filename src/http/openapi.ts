import { errorResponses } from "../wire/common.ts";

/**
 * What `/openapi.json` says besides the routes: @fastify/swagger generates the paths from the
 * routes' own schemas (ARCHITECTURE §7). Routes without the API key say `security: []`.
 */
export const openapiDocument = {
  openapi: "3.1.0",
  info: {
    title: "longhaul",
    version: "1",
    description: "Long-running, webhook-driven tasks: submit, dispatch, suspend, resume on signed webhooks.",
  },
  security: [{ apiKey: [] }],
  components: {
    securitySchemes: { apiKey: { type: "http" as const, scheme: "bearer" } },
  },
};

type Operation = {
  requestBody?: { required?: boolean; content?: Record<string, { schema?: { required?: string[] } }> };
};

/**
 * The generator marks every request body required; a body whose fields are all optional may
 * be left out (the server reads no body as `{}`), and the document says so.
 */
export function optionalBodies<T extends { paths?: object }>(openapiObject: T): T {
  for (const ops of Object.values(openapiObject.paths ?? {}) as Record<string, Operation>[]) {
    for (const op of Object.values(ops)) {
      const body = op.requestBody;
      if (!body?.content) continue;
      const required = Object.values(body.content).some((m) => (m.schema?.required?.length ?? 0) > 0);
      if (!required) body.required = false;
    }
  }
  return openapiObject;
}

interface OperationExtra {
  security?: never[];
  response?: Record<string, unknown>;
  [part: string]: unknown;
}

/** A route's schema: its summary, what it accepts, what it answers, and the error body on 4xx and 5xx. */
export function operation<T extends OperationExtra>(summary: string, extra?: T) {
  return {
    summary,
    ...extra,
    response: { ...errorResponses, ...extra?.response },
  } as Omit<T, "response"> & { summary: string; response: typeof errorResponses & T["response"] };
}
