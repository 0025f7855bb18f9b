import Fastify, {
  type FastifyInstance,
  type FastifyPluginCallback,
  type FastifyServerOptions,
  type RouteOptions,
} from "fastify";
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

type Compilers = NonNullable<NonNullable<FastifyServerOptions["schemaController"]>["compilersFactory"]>;

/**
 * `/openapi.json`, built the first time it is asked for. `collect`, registered where
 * @fastify/swagger would be, records every route as Fastify announces it; `document()` then
 * hands the same routes, in the same order, to @fastify/swagger on a Fastify instance of its
 * own that serves nothing, so neither the generator nor its YAML writer is loaded, nor the
 * document built, while the server starts.
 */
export function openapiDocs(): { collect: FastifyPluginCallback; document(): Promise<unknown> } {
  const routes: RouteOptions[] = [];
  // Its hooks apply to the instance it is registered on, as fastify-plugin makes a plugin's.
  const collect = Object.assign(
    (instance: FastifyInstance, _opts: unknown, done: () => void) => {
      instance.addHook("onRoute", (route) => {
        routes.push(route);
      });
      done();
    },
    { [Symbol.for("skip-override")]: true, [Symbol.for("fastify.display-name")]: "openapi-routes" },
  );

  const build = async (): Promise<unknown> => {
    const { default: swagger } = await import("@fastify/swagger");
    const ignore = () => () => true;
    const doc = Fastify({
      // The routes recorded include the HEAD routes Fastify added; they are not added twice.
      exposeHeadRoutes: false,
      schemaController: {
        compilersFactory: {
          buildValidator: ignore as unknown as Compilers["buildValidator"],
          buildSerializer: () => () => (data: unknown) => JSON.stringify(data),
        },
      },
    });
    await doc.register(swagger, {
      openapi: openapiDocument,
      transformObject: (d) => ("openapiObject" in d ? optionalBodies(d.openapiObject) : d.swaggerObject),
    });
    for (const r of routes) {
      doc.route({
        method: r.method,
        url: r.url,
        // @fastify/websocket hides its routes from documents; a WebSocket route is API all the same.
        ...(r.schema ? { schema: r.websocket ? { ...r.schema, hide: false } : r.schema } : {}),
        ...(r.config ? { config: r.config } : {}),
        ...(r.constraints ? { constraints: r.constraints } : {}),
        handler: async () => null,
      });
    }
    await doc.ready();
    const document = doc.swagger();
    await doc.close();
    return document;
  };
  let built: Promise<unknown> | null = null;
  return {
    collect,
    document: () =>
      (built ??= build().catch((err) => {
        built = null;
        throw err;
      })),
  };
}
