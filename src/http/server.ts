import Fastify, { type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { Clock } from "../core/clock.ts";
import type { TaskType } from "../core/task-type.ts";
import type { Registry } from "../engine/registry.ts";
import type { Source } from "../ingress/sources.ts";
import type { Store } from "../store/store.ts";
import type { CapabilityUrls } from "../tokens/capability-urls.ts";
import type { Keyring } from "../tokens/keyring.ts";
import { adminAuth } from "./admin-auth.ts";
import { adminEventsRoutes } from "./admin-events-routes.ts";
import { approvalsRoutes } from "./approvals-routes.ts";
import { tenantAuth } from "./auth.ts";
import { callbacksRoutes } from "./callbacks-routes.ts";
import { installErrorHandling } from "./error-handler.ts";
import { hooksRoutes } from "./hooks-routes.ts";
import { signalsRoutes } from "./signals-routes.ts";
import { tasksRoutes } from "./tasks-routes.ts";

export interface ServerDeps {
  store: Store;
  clock: Clock;
  taskTypes: Registry<TaskType>;
  sources: Map<string, Source>;
  log: Logger;
  adminKey?: string | undefined;
  keyring: Keyring;
  urls: CapabilityUrls;
}

/** The HTTP API (DESIGN §7). Slow clients are cut off by header and request timeouts. */
export function buildServer(d: ServerDeps): FastifyInstance {
  const app = Fastify({
    loggerInstance: d.log as FastifyBaseLogger,
    bodyLimit: 1024 * 1024,
    requestTimeout: 30_000,
    // Capability tokens travel in the path.
    maxParamLength: 2100,
    connectionTimeout: 0,
    keepAliveTimeout: 72_000,
    return503OnClosing: true,
  });
  app.server.headersTimeout = 10_000;
  installErrorHandling(app);

  app.get("/healthz", async () => ({ status: "ok" }));

  hooksRoutes(app, d.store, d.sources, d.clock);
  callbacksRoutes(app, d);
  approvalsRoutes(app, d);

  app.register(async (admin) => {
    admin.addHook("onRequest", adminAuth(d.adminKey));
    adminEventsRoutes(admin, d.store);
  });

  app.register(async (api) => {
    api.addHook("onRequest", tenantAuth(d.store));
    tasksRoutes(api, d.store, d.taskTypes, d.urls);
    signalsRoutes(api, d.store);
  });
  return app;
}
