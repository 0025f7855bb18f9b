import { Type } from "typebox";
import type { Clock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import { slack } from "../ingress/slack.ts";
import type { NotifySettings } from "../notify/settings.ts";
import { slackAction } from "../notify/slack-action.ts";
import type { WaitStore } from "../store/store.ts";
import type { Keyring } from "../tokens/keyring.ts";
import { decideBySlack } from "../usecases/decide-by-slack.ts";
import type { Api } from "./api.ts";
import { operation } from "./openapi.ts";

const SlackAnswer = Type.Object({
  accepted: Type.Literal(true),
  task_id: Type.String(),
  step_id: Type.String(),
  approver: Type.String(),
  decision: Type.Enum(["approve", "reject"]),
});

/**
 * `POST /v1/slack/interactions`: Slack's Interactivity Request URL for approval messages. The
 * form-encoded body is verified on its raw bytes with the app's signing secrets, as a `slack`
 * source verifies (`src/ingress/slack.ts`), then the button decides as the Slack user who
 * clicked (`decideBySlack`). Served only when signing secrets are configured: without them no
 * click could be verified.
 */
export function slackRoutes(
  app: Api,
  d: { store: WaitStore; keyring: Keyring; clock: Clock; notify?: NotifySettings | undefined },
): void {
  const notify = d.notify;
  const secrets = notify?.slack.signingSecrets ?? [];
  if (notify === undefined || secrets.length === 0) return;
  const verifier = slack.create({ name: "slack-interactions", provider: "slack", secrets });
  app.register(async (scope: Api) => {
    scope.addContentTypeParser(
      "application/x-www-form-urlencoded",
      { parseAs: "buffer", bodyLimit: 256 * 1024 },
      (_req, body, done) => done(null, body),
    );
    scope.post(
      "/v1/slack/interactions",
      {
        schema: operation("A Slack button click on an approval message (signed by Slack)", {
          security: [],
          response: { 200: SlackAnswer },
        }),
      },
      async (req) => {
        if (verifier === null || d.notify === undefined) {
          throw new LonghaulError(
            "NOT_FOUND",
            "Slack interactivity is not configured (notify.slack.signing_secrets).",
          );
        }
        const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        const verified = await verifier.verify({ headers: req.headers, body, nowMs: d.clock.now() });
        let payload: unknown;
        try {
          payload = JSON.parse((verified.eventBody ?? body).toString("utf8"));
        } catch {
          throw new LonghaulError("INVALID_JSON", "The Slack payload is not JSON.");
        }
        const r = await decideBySlack(
          { waits: d.store, keyring: d.keyring, clock: d.clock, users: notify.slack.users },
          { action: slackAction(payload), address: req.ip, userAgent: req.headers["user-agent"] ?? null },
        );
        return {
          accepted: true as const,
          task_id: r.taskId,
          step_id: r.stepId,
          approver: r.approver,
          decision: r.decision,
        };
      },
    );
  });
}
