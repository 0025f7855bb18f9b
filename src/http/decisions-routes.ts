import type { WaitStore } from "../store/store.ts";
import { decideApprovalByKey } from "../usecases/decide-approval.ts";
import { DecisionResult, KeyDecisionBody, StepParams } from "../wire/approvals.ts";
import type { Api } from "./api.ts";
import { operation } from "./openapi.ts";

/**
 * `POST /v1/tasks/:id/approvals/:step_id`: a decision with the tenant's API key, for a
 * backend that decides on its users' behalf (its own UI, a chat bot). Recorded with the key,
 * the user it names, the address and the user agent.
 */
export function decisionsRoutes(app: Api, store: WaitStore): void {
  app.post(
    "/v1/tasks/:id/approvals/:step_id",
    {
      schema: operation(
        "Approve or reject a waiting approval step with the API key, for one of its named approvers or as the key",
        { params: StepParams, body: KeyDecisionBody, response: { 200: DecisionResult } },
      ),
    },
    async (req) => {
      const b = req.body;
      const decision = await decideApprovalByKey(
        { waits: store },
        {
          tenantId: req.tenant.id,
          taskId: req.params.id,
          stepId: req.params.step_id,
          keyHash: req.apiKeyHash ?? null,
          decision: b.decision,
          approver: b.approver,
          userId: b.user_id,
          comment: b.comment,
          address: req.ip,
          userAgent: req.headers["user-agent"],
        },
      );
      return { accepted: true as const, task_id: req.params.id, step_id: req.params.step_id, decision };
    },
  );
}
