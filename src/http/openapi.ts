import Fastify, {
  type FastifyInstance,
  type FastifyPluginCallback,
  type FastifyServerOptions,
  type RouteOptions,
} from "fastify";
import { errorResponses } from "../wire/common.ts";
import * as wire from "../wire/index.ts";
import { operations, operationTags } from "./operations.ts";

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
  tags: operationTags.map((t) => ({ ...t })),
  components: {
    securitySchemes: { apiKey: { type: "http" as const, scheme: "bearer" } },
  },
};

type Operation = {
  requestBody?: { required?: boolean; content?: Record<string, { schema?: { required?: string[] } }> };
};

type Doc = { paths?: object; components?: { schemas?: Record<string, unknown> } };

/**
 * Names every operation (`operationId`) and tags it from the one table in ./operations.ts. An
 * operation missing there gets an id derived from its method and path, and the tag `Other`,
 * which test/openapi.test.ts refuses.
 */
export function nameOperations<T extends Doc>(doc: T): T {
  for (const [path, ops] of Object.entries(doc.paths ?? {}) as [string, Record<string, object>][]) {
    for (const [method, op] of Object.entries(ops)) {
      const known = operations[`${method.toUpperCase()} ${path}`];
      const derived = `${method}${path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ?? "").toUpperCase())}`;
      Object.assign(op, { operationId: known?.id ?? derived, tags: [known?.tag ?? "Other"] });
    }
  }
  return doc;
}

/**
 * Request bodies the server reads as streams, not through a schema (an upload's bytes), as the
 * document describes them, by `METHOD path`.
 */
const streamedBodies: Readonly<Record<string, object>> = {
  "POST /v1/files": {
    required: true,
    content: {
      "multipart/form-data": { schema: wire.FileUploadForm },
      "*/*": {
        schema: {
          type: "string",
          format: "binary",
          description: "The file's bytes, with their Content-Type",
        },
      },
    },
  },
};

/** Writes the streamed request bodies (`streamedBodies`) into the document. */
export function streamedRequestBodies<T extends Doc>(doc: T): T {
  for (const [path, ops] of Object.entries(doc.paths ?? {}) as [string, Record<string, object>][]) {
    for (const [method, op] of Object.entries(ops)) {
      const body = streamedBodies[`${method.toUpperCase()} ${path}`];
      if (body) Object.assign(op, { requestBody: body });
    }
  }
  return doc;
}

/** The wire schemas worth a name of their own: every exported object schema of src/wire. */
function wireComponents(): Map<string, string> {
  const byJson = new Map<string, string>();
  for (const [name, value] of Object.entries(wire)) {
    if (typeof value !== "object" || value === null || (value as { type?: unknown }).type !== "object")
      continue;
    if (!(value as { properties?: object }).properties) continue;
    const json = JSON.stringify(value);
    if (!byJson.has(json)) byJson.set(json, name);
  }
  return byJson;
}

/**
 * Moves the wire shapes the generator wrote inline into `components.schemas` and points each
 * use at it with `$ref`, so a code generator makes one type per shape (`TaskDetail`,
 * `ErrorBody`, …) instead of one per route. Only bodies and answers are rewritten; what the
 * server validates is untouched.
 */
export function shareComponents<T extends Doc>(doc: T): T {
  const byJson = wireComponents();
  const schemas: Record<string, unknown> = { ...doc.components?.schemas };
  const share = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(share);
    if (typeof node !== "object" || node === null) return node;
    const name = byJson.get(JSON.stringify(node));
    if (name) {
      if (!(name in schemas)) {
        schemas[name] = {};
        schemas[name] = shareChildren(node as Record<string, unknown>);
      }
      return { $ref: `#/components/schemas/${name}` };
    }
    return shareChildren(node as Record<string, unknown>);
  };
  const shareChildren = (node: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(node).map(([k, v]) => [k, share(v)]));
  for (const ops of Object.values(doc.paths ?? {}) as Record<string, Record<string, unknown>>[]) {
    for (const op of Object.values(ops)) {
      if (op.requestBody) op.requestBody = share(op.requestBody);
      if (op.responses) op.responses = share(op.responses);
    }
  }
  doc.components = { ...doc.components, schemas };
  return doc;
}

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
      transformObject: (d) =>
        "openapiObject" in d
          ? shareComponents(nameOperations(streamedRequestBodies(optionalBodies(d.openapiObject))))
          : d.swaggerObject,
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
