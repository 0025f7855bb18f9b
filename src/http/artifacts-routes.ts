import type { BlobStore } from "../blobs/blob-store.ts";
import type { ArtifactStore, TaskStore } from "../store/store.ts";
import { getArtifact, readArtifactContent } from "../usecases/get-artifact.ts";
import { taskInScope } from "../usecases/mint-read-token.ts";
import { ArtifactParams } from "../wire/tasks.ts";
import type { Api } from "./api.ts";
import { operation } from "./openapi.ts";
import { serveBlob } from "./serve-blob.ts";

export interface ArtifactsRoutesDeps {
  store: ArtifactStore & TaskStore;
  blobs: BlobStore;
}

/**
 * `GET /v1/tasks/:id/artifacts/:name`: an artifact's bytes (with Range), scoped by the caller's
 * tenant; a read token that opens the task opens its artifacts too. The list is the task's
 * `artifacts` (`GET /v1/tasks/:id`).
 */
export function artifactsRoutes(app: Api, d: ArtifactsRoutesDeps): void {
  app.get(
    "/v1/tasks/:id/artifacts/:name",
    {
      config: { readToken: true },
      schema: operation(
        "A task's artifact, streamed with its Content-Type; a single `Range: bytes=` is honoured (206). API key, or a read token that opens the task",
        { params: ArtifactParams },
      ),
    },
    async (req, reply) => {
      const { id: taskId, name } = req.params;
      const scope = req.readScope;
      if (scope) await taskInScope({ tasks: d.store }, { tenantId: req.tenant.id, scope, taskId });
      const artifact = await getArtifact({ artifacts: d.store }, { tenantId: req.tenant.id, taskId, name });
      return serveBlob(req, reply, { ...artifact, whose: "the artifact's" }, (range) =>
        readArtifactContent(d, artifact, range),
      );
    },
  );
}
