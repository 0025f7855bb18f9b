import type { FastifyReply } from "fastify";
import type { Clock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import type { WaitStore } from "../store/store.ts";
import type { Keyring } from "../tokens/keyring.ts";
import { type ApprovalClaims, approvalClaims, decideApproval } from "../usecases/decide-approval.ts";
import { refuseDecision } from "../usecases/refuse-wait.ts";
import { DecisionBody, DecisionResult, TokenParams } from "../wire/approvals.ts";
import type { Api } from "./api.ts";
import { renderApprovalPage } from "./approval-page.ts";
import { operation } from "./openapi.ts";
import { htmlPageHeaders } from "./page-headers.ts";

// The page needs no script, image or connection of its own: only its inline style and its form.
const pageHeaders = htmlPageHeaders("default-src 'none'; style-src 'unsafe-inline'; form-action 'self'");

/** `GET|POST /v1/approvals/:token`: the approval page, and the decision (JSON, or the page's form). */
export function approvalsRoutes(app: Api, d: { store: WaitStore; keyring: Keyring; clock: Clock }): void {
  const claimsOf = (token: string): ApprovalClaims => approvalClaims(d, token);

  /**
   * The page posts back to the link that served it, so it offers only what that link may do:
   * both decisions for a `decide` link, one button for a single-purpose link. It never mints
   * a link of another purpose.
   */
  const page = async (reply: FastifyReply, token: string, claims: ApprovalClaims, notice: string | null) => {
    const found = await d.store.stepForToken(claims.tenantId, claims.taskId, claims.stepId);
    if (!found) throw new LonghaulError("TASK_NOT_FOUND", "The task of this link no longer exists.");
    const html = renderApprovalPage({
      task: found.task,
      step: found.step,
      decisions: await d.store.approvalDecisions(claims.taskId, claims.stepId),
      approver: claims.approver ?? null,
      // Relative, so the form posts back to whatever host served the page.
      actionUrl: `/v1/approvals/${token}`,
      allowed: claims.purpose === "decide" ? ["approve", "reject"] : [claims.purpose],
      notice,
    });
    return reply.status(200).headers(pageHeaders).send(html);
  };

  app.register(async (scope: Api) => {
    scope.addContentTypeParser(
      "application/x-www-form-urlencoded",
      { parseAs: "string", bodyLimit: 64 * 1024 },
      (_req, body, done) => done(null, Object.fromEntries(new URLSearchParams(String(body)))),
    );

    const html = {
      description: "The approval page",
      content: { "text/html": { schema: { type: "string" } } },
    };
    const show = operation(
      "The approval page: the buttons its link may use, and only the input fields the step shows",
      { security: [], params: TokenParams, response: { 200: html } },
    );
    scope.get("/v1/approvals/:token", { schema: show }, async (req, reply) =>
      page(reply, req.params.token, claimsOf(req.params.token), null),
    );

    // JSON answers with the decision; the page's own form (urlencoded) gets the page again.
    const decide = operation(
      "Approve or reject. approval_url needs decision; a one-click approve_url or reject_url takes only its own",
      {
        security: [],
        consumes: ["application/json", "application/x-www-form-urlencoded"],
        params: TokenParams,
        body: DecisionBody,
        response: { 200: DecisionResult },
      },
    );
    scope.post("/v1/approvals/:token", { schema: decide }, async (req, reply) => {
      const claims = claimsOf(req.params.token);
      const b = req.body;
      const { decision, answer } = await decideApproval(
        { waits: d.store },
        {
          claims,
          decision: b.decision,
          approver: b.approver,
          comment: b.comment,
          address: req.ip,
          userAgent: req.headers["user-agent"],
        },
      );
      const fromForm = req.headers["content-type"]?.startsWith("application/x-www-form-urlencoded");
      if (answer !== "accepted") {
        if (fromForm)
          return page(reply, req.params.token, claims, `Not recorded: ${answer.replaceAll("_", " ")}.`);
        refuseDecision(answer, claims.stepId);
      }
      if (fromForm) return page(reply, req.params.token, claims, `Your decision (${decision}) was recorded.`);
      return reply
        .status(200)
        .send({ accepted: true, task_id: claims.taskId, step_id: claims.stepId, decision });
    });
  });
}
