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
