import { createServer } from "node:http";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import fastifyWebsocket from "@fastify/websocket";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from "fastify";
import type { Logger } from "pino";
import { Type } from "typebox";
import type { BlobStore } from "../blobs/blob-store.ts";
import type { Clock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import { readJson } from "../core/json-input.ts";
import { DEFAULT_LIMITS, type Limits } from "../core/limits.ts";
import type { Registry } from "../core/registry.ts";
import type { TaskType } from "../core/task-type.ts";
import type { Source } from "../ingress/sources.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { type NotifySettings, notifyContext } from "../notify/settings.ts";
import type { OutboundSettings } from "../outbound/settings.ts";
import type { Embedder } from "../search/embedder.ts";
import type { Store } from "../store/store.ts";
import type { CapabilityUrls } from "../tokens/capability-urls.ts";
import type { Keyring } from "../tokens/keyring.ts";
import { Health } from "../wire/common.ts";
import { adminAuth } from "./admin-auth.ts";
import { adminEventsRoutes } from "./admin-events-routes.ts";
import { adminTenantsRoutes } from "./admin-tenants-routes.ts";
import { approvalsRoutes } from "./approvals-routes.ts";
import { artifactsRoutes } from "./artifacts-routes.ts";
import { apiAuth } from "./auth.ts";
import { callbacksRoutes } from "./callbacks-routes.ts";
import { type DashboardOptions, dashboardRoutes } from "./dashboard-routes.ts";
import { decisionsRoutes } from "./decisions-routes.ts";
import { frameworkErrors, installErrorHandling, schemaErrorFormatter } from "./error-handler.ts";
import { eventSinksRoutes } from "./event-sinks-routes.ts";
import { EventStreams, type EventStreamsOptions } from "./event-streams.ts";
import { eventsRoutes } from "./events-routes.ts";
import { filesRoutes } from "./files-routes.ts";
import { hookIngress } from "./hook-ingress.ts";
import { hooksRoutes } from "./hooks-routes.ts";
import { REDACTED, redactPaths, safeSerializers } from "./log-redaction.ts";
import { metricsAuth } from "./metrics-auth.ts";
import { notificationsRoutes } from "./notifications-routes.ts";
import { openapiDocs, operation } from "./openapi.ts";
import { payloadsRoutes } from "./payloads-routes.ts";
import { hookWindows, installRateLimits } from "./rate-limits.ts";
import { referencePageHeaders, renderReferencePage } from "./reference-page.ts";
import { REQUEST_ID_HEADER, requestIdFor } from "./request-id.ts";
import { searchRoutes } from "./search-routes.ts";
import { lazySerializers } from "./serializers.ts";
import { signalsRoutes } from "./signals-routes.ts";
import { slackRoutes } from "./slack-routes.ts";
import { statsRoutes } from "./stats-routes.ts";
import { taskTypesRoutes } from "./task-types-routes.ts";
import { tasksRoutes } from "./tasks-routes.ts";
import { timelineRoutes } from "./timeline-routes.ts";
import { tokensRoutes } from "./tokens-routes.ts";
import { usageRoutes } from "./usage-routes.ts";
import { loadValidation, validationLoaded, validatorCompiler } from "./validator.ts";
import { webhookEndpointsRoutes } from "./webhook-endpoints-routes.ts";

export interface ServerDeps {
  store: Store;
  clock: Clock;
  taskTypes: Registry<TaskType>;
  sources: Map<string, Source>;
  log: Logger;
  adminKey?: string | undefined;
  keyring: Keyring;
  urls: CapabilityUrls;
  /** The SSRF policy that webhook endpoint URLs are checked against when they are registered. */
  outbound: OutboundSettings;
  /** Approvals' channels: checked at submit, and Slack's button clicks verified with its signing secrets. */
  notify?: NotifySettings | undefined;
  realtime?: EventStreamsOptions | undefined;
  dashboard?: DashboardOptions | undefined;
  timeouts?: { headersMs?: number; requestMs?: number } | undefined;
  metrics?: Metrics | undefined;
  /** Rate limits and per-tenant caps; default `DEFAULT_LIMITS`. */
  limits?: Limits | undefined;
  /** Where uploaded files' bytes live; without it the `/v1/files` routes are not served. */
  blobs?: BlobStore | undefined;
  /** `/metrics` on this server without the admin key (the `metrics.public` setting). */
  metricsPublic?: boolean | undefined;
  /**
   * `all` (default): every route. `health`: only the probes (`/livez`, `/readyz`, `/healthz`), `/openapi.json` and `/metrics`, for
   * a worker node (`serve --role worker`), which an orchestrator probes but no client calls.
   */
  routes?: "all" | "health" | undefined;
  /** The embedder of `POST /v1/search`'s vector queries: the one tasks' chunks are indexed with. */
  embedder: Embedder;
}

/** Where large values go and how many of their bytes a task's view reads back (ARCHITECTURE §4.10). */
export function payloadSettings(blobs: BlobStore, limits: Limits) {
  return {
    blobs,
    inlineMaxBytes: limits.inline_max_bytes,
    inlineResponseMaxBytes: limits.inline_response_max_bytes,
  };
}

/** Resolves once request validators may run (see ./validator.ts). */
function awaitValidation(_req: unknown, _reply: unknown, done: (err?: Error) => void): void {
  if (validationLoaded()) done();
  else loadValidation().then(() => done(), done);
}

/** Fastify's validator factory type wants Ajv's; ours answers TypeBox's compiler whatever it is given. */
const validators = (() => validatorCompiler) as unknown as NonNullable<
  NonNullable<NonNullable<FastifyServerOptions["schemaController"]>["compilersFactory"]>["buildValidator"]
>;

/** The HTTP API (ARCHITECTURE §7). Slow clients are cut off by header and request timeouts. */
export function buildServer(d: ServerDeps): FastifyInstance {
  const t = { headersMs: 10_000, requestMs: 30_000, ...d.timeouts };
  const limits = d.limits ?? DEFAULT_LIMITS;
  const log = d.log.child(
    {},
    { serializers: safeSerializers, redact: { paths: redactPaths, censor: REDACTED } },
  );
  let closing = false;
  // One count of webhooks per source and address, whichever path answers them.
  const hookLimit = hookWindows(limits);
  // Webhooks are answered ahead of the router (./hook-ingress.ts); every other request goes to it.
  const ingress =
    d.routes === "health"
      ? null
      : hookIngress({
          store: d.store,
          sources: d.sources,
          clock: d.clock,
          log,
          metrics: d.metrics,
          windows: hookLimit,
          closing: () => closing,
        });
  const app = Fastify({
    // Request, response and error lines carry no capability token and no key, whatever logger
    // the deployment was given.
    loggerInstance: log as FastifyBaseLogger,
    bodyLimit: 1024 * 1024,
    // Slow clients (slowloris) are cut off: all headers within headersMs, the whole request
    // within requestMs, checked often enough that the limits mean what they say.
    serverFactory: (handler) =>
      createServer(
        {
          headersTimeout: t.headersMs,
          requestTimeout: t.requestMs,
          connectionsCheckingInterval: Math.max(50, Math.min(1000, t.headersMs / 4)),
        },
        ingress ? (req, res) => ingress(req, res) || handler(req, res) : handler,
      ),
    // Capability tokens travel in the path.
    routerOptions: { maxParamLength: 2100 },
    // Every request's id is the caller's valid `X-Request-Id` or a new ULID (./request-id.ts):
    // the header is read in genReqId, not by `requestIdHeader`, which would take any value.
    requestIdHeader: false,
    genReqId: (req) => requestIdFor(req.headers[REQUEST_ID_HEADER]),
    // What the router refuses before any route or hook runs leaves in our error shape too.
    frameworkErrors: frameworkErrors as NonNullable<FastifyServerOptions["frameworkErrors"]>,
    connectionTimeout: 0,
    keepAliveTimeout: 72_000,
    return503OnClosing: true,
    schemaErrorFormatter,
    // Fastify's default compilers (Ajv, fast-json-stringify) would be loaded, and every route's
    // response schemas compiled, before the server listens: requests are checked by TypeBox
    // (./validator.ts) and responses serialized by fast-json-stringify once first needed.
    schemaController: {
      compilersFactory: {
        buildValidator: validators,
        buildSerializer: lazySerializers,
      },
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  // The validators' compiler is loaded by the first request that needs it, not at start: a
  // route that checks its input waits for it before validation.
  app.addHook("onRoute", (route) => {
    const s = route.schema;
    if (!s || (s.body ?? s.querystring ?? s.params ?? s.headers) === undefined) return;
    const hooks = route.preValidation;
    route.preValidation = [
      awaitValidation,
      ...(hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks]),
    ];
  });
  installErrorHandling(app);
  // First of every request's hooks, so whatever answers it (an error, a 404) names the id.
  app.addHook("onRequest", async (req, reply) => {
    reply.header(REQUEST_ID_HEADER, req.id);
  });
  // Labelled by the route's pattern, never the URL, so ids in paths add no series.
  const metrics = d.metrics;
  if (metrics) {
    app.addHook("onResponse", async (req, reply) => {
      metrics.httpSeconds.observe(
        { method: req.method, route: req.routeOptions.url ?? "unmatched", status: String(reply.statusCode) },
        reply.elapsedTime / 1000,
      );
    });
  }
  // /openapi.json is generated from the routes' schemas, so it cannot drift from what they accept.
  const openapi = openapiDocs();
  app.register(openapi.collect);
  // Every JSON body goes through one parser that caps nesting, refuses prototype keys and
  // numbers out of a double's range.
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_req, body, done) => {
    if (body === "") return done(new LonghaulError("INVALID_JSON", "The body is empty; send a JSON object."));
    const read = readJson(body as string, "The body", { finite: true });
    if (read.ok) done(null, read.value);
    else done(read.error);
  });
  const rateLimits = installRateLimits(app, limits, (name) => d.sources.has(name), hookLimit);
  // `GET /v1/events/ws`; clients send nothing but control frames, so a message is kept small.
  app.register(fastifyWebsocket, { options: { maxPayload: 4096 } });
  const streams = new EventStreams(d.store, d.log, {
    maxPerTenant: limits.sse_streams_per_tenant,
    ...d.realtime,
  });
  app.decorate("eventStreams", streams);
  // Open SSE streams would hold the server open; clients resume elsewhere with Last-Event-ID.
  app.addHook("preClose", async () => {
    closing = true;
    await streams.close();
  });

  // No identifier holds a NUL, and PostgreSQL text cannot even be queried with one.
  app.addHook("onRequest", async (req) => {
    if (/%00/i.test(req.url)) throw new LonghaulError("BAD_REQUEST", "The URL contains a NUL character.");
  });
  // Registered as a plugin, like every group of routes, so the document generator sees them.
  app.register(async (root) => {
    // Liveness: the process answers. An orchestrator restarts a container that fails it, so it
    // never depends on the database: an outage there must not restart healthy nodes.
    root.get(
      "/livez",
      {
        schema: operation("Liveness: the process answers; never depends on the database", {
          security: [],
          response: { 200: Type.Object({ status: Type.Literal("ok") }) },
        }),
        serializerCompiler: () => (data) => JSON.stringify(data),
      },
      async () => ({ status: "ok" as const }),
    );
    // Readiness: the store answers. A load balancer stops sending traffic while it fails.
    for (const path of ["/readyz", "/healthz"]) {
      root.get(
        path,
        {
          schema: operation(
            path === "/readyz"
              ? "Readiness: 200 when the store answers, 503 degraded while the database is unreachable or its disk is full"
              : "Health, as /readyz (kept for existing probes)",
            { security: [], response: { 200: Health, 503: Health } },
          ),
          // Two fixed fields, as the schema orders them: answered without loading a serializer,
          // so a probe right after start does not wait for one.
          serializerCompiler: () => (data) => JSON.stringify(data),
        },
        async (_req, reply) => {
          const store = await d.store.health().catch(() => "degraded" as const);
          return reply
            .status(store === "ok" ? 200 : 503)
            .send({ status: store === "ok" ? "ok" : "degraded", store });
        },
      );
    }

    root.get(
      "/openapi.json",
      {
        schema: operation("This document: the HTTP API as OpenAPI 3.1", {
          security: [],
          response: { 200: Type.Object({}, { additionalProperties: true }) },
        }),
      },
      async () => openapi.document(),
    );
    root.get(
      "/docs",
      {
        schema: operation("The API reference: this API's OpenAPI document rendered as one HTML page", {
          security: [],
        }),
      },
      async (_req, reply) =>
        reply.headers(referencePageHeaders()).send(renderReferencePage((await openapi.document()) as object)),
    );
    if (d.metrics) {
      const registry = d.metrics.registry;
      const auth = d.metricsPublic ? null : metricsAuth(d.adminKey);
      root.get(
        "/metrics",
        { schema: operation("Prometheus metrics (admin key, unless metrics.public)") },
        async (req, reply) => {
          await auth?.(req);
          const text = await registry.metrics();
          return reply.type(registry.contentType).send(text);
        },
      );
    }
  });

  if (d.routes === "health") return app;
  hooksRoutes(app, d.store, d.sources, d.clock, d.metrics);
  callbacksRoutes(app, d);
  approvalsRoutes(app, d);
  slackRoutes(app, d);
  dashboardRoutes(app, d.dashboard);

  app.register(async (admin) => {
    admin.addHook("onRequest", rateLimits.failuresLimited(adminAuth(d.adminKey)));
    adminEventsRoutes(admin, d.store);
    adminTenantsRoutes(admin, d.store);
  });

  app.register(async (api) => {
    api.addHook("onRequest", rateLimits.authenticated(apiAuth(d.store, d.clock, d.keyring)));
    tasksRoutes(api, {
      store: d.store,
      taskTypes: d.taskTypes,
      urls: d.urls,
      metrics: d.metrics,
      schemaTimeoutMs: limits.schema_timeout_s * 1000,
      files: d.store,
      urlPolicy: { allowPrivateNetworks: d.outbound.allowPrivateNetworks },
      ...(d.blobs ? { payloads: payloadSettings(d.blobs, limits) } : {}),
      // Only the submit takes bodies past the API's 1 MiB: its input may go to the blob store.
      submitMaxBytes: limits.submit_max_bytes === 0 ? Number.MAX_SAFE_INTEGER : limits.submit_max_bytes,
      ...(d.notify ? { notify: notifyContext(d.notify) } : {}),
    });
    payloadsRoutes(api, { store: d.store, blobs: d.blobs });
    decisionsRoutes(api, d.store);
    notificationsRoutes(api, d.store);
    timelineRoutes(api, d.store);
    taskTypesRoutes(api, d.taskTypes);
    statsRoutes(api, d);
    signalsRoutes(api, d.store);
    usageRoutes(api, d.store);
    eventsRoutes(api, d.store, streams);
    tokensRoutes(api, { store: d.store, keyring: d.keyring, clock: d.clock });
    webhookEndpointsRoutes(api, d.store, d.outbound, limits.webhook_endpoints_per_tenant);
    searchRoutes(api, { store: d.store, embedder: d.embedder });
    eventSinksRoutes(api, d.store, d.outbound, limits.webhook_endpoints_per_tenant);
    if (d.blobs) artifactsRoutes(api, { store: d.store, blobs: d.blobs });
    if (d.blobs)
      filesRoutes(api, {
        store: d.store,
        blobs: d.blobs,
        clock: d.clock,
        fileMaxBytes: limits.file_max_bytes,
        storageQuotaBytes: limits.storage_quota_bytes,
      });
  });
  return app;
}
