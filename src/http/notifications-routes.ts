import { Type } from "typebox";
import { notificationJson } from "../actions/serialize.ts";
import type { NotificationStore } from "../store/store.ts";
import { Notification } from "../wire/tasks.ts";
import type { Api } from "./api.ts";
import { operation } from "./openapi.ts";

const Params = Type.Object({ id: Type.String(), notification_id: Type.String() });

/**
 * `POST /v1/tasks/:id/notifications/:notification_id/replay`: sends a dead approval message
 * again, its retry schedule from the start (ARCHITECTURE §4.7, as a delivery's replay).
 */
export function notificationsRoutes(app: Api, store: NotificationStore): void {
  app.post(
    "/v1/tasks/:id/notifications/:notification_id/replay",
    {
      schema: operation("Send a dead approval message again", {
        params: Params,
        response: { 200: Notification },
      }),
    },
    async (req) => {
      const n = await store.replayNotification(req.tenant.id, req.params.id, req.params.notification_id);
      return notificationJson(n);
    },
  );
}
