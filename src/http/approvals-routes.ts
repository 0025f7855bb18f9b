import type { FastifyReply } from "fastify";
import type { Clock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import type { WaitStore } from "../store/store.ts";
import type { Keyring } from "../tokens/keyring.ts";
import { type TokenClaims, verifyToken } from "../tokens/token.ts";
import { DecisionBody, DecisionResult, TokenParams } from "../wire/approvals.ts";
import type { Api } from "./api.ts";
import { renderApprovalPage } from "./approval-page.ts";
import { operation } from "./openapi.ts";
import { refuseWait } from "./wait-answer.ts";

const pageHeaders = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
};

/** `GET|POST /v1/approvals/:token`: the approval page, and the decision (JSON, or the page's form). */
export function approvalsRoutes(app: Api, d: { store: WaitStore; keyring: Keyring; clock: Clock }): void {
  type ApprovalClaims = TokenClaims & { purpose: "approve" | "reject" | "decide" };
  const claimsOf = (token: string): ApprovalClaims => {
    const claims = verifyToken(d.keyring, token, d.clock.now());
    if (claims.purpose === "callback") {
      throw new LonghaulError(
        "FORBIDDEN",
        "This link is a callback URL, not an approval; POST the result to it.",
      );
    }
    return claims as ApprovalClaims;
  };

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

  /** The decision a POST asks for, checked against what its link allows. */
  const decisionOf = (claims: ApprovalClaims, asked: unknown): "approve" | "reject" => {
    if (claims.purpose === "decide") {
      if (asked === "approve" || asked === "reject") return asked;
      throw new LonghaulError(
        "VALIDATION_FAILED",
        `decision is ${asked === undefined ? "missing" : (JSON.stringify(asked) ?? String(asked)).slice(0, 60)}; this link takes {"decision": "approve"} or {"decision": "reject"}.`,
      );
    }
    const decision = asked ?? claims.purpose;
    if (decision !== claims.purpose) {
      throw new LonghaulError(
        "FORBIDDEN",
        `This link can only ${claims.purpose}; use the other link to ${String(decision)}.`,
      );
    }
    return claims.purpose;
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
      const decision = decisionOf(claims, b.decision);
      const text = (v: unknown, max: number) =>
        typeof v === "string" && v.trim().length > 0 ? v.replaceAll("\u0000", "").trim().slice(0, max) : null;
      const answer = await d.store.decideApproval({
        tenantId: claims.tenantId,
        taskId: claims.taskId,
        stepId: claims.stepId,
        attempt: claims.attempt,
        approver: claims.approver ?? text(b.approver, 200),
        decision,
        comment: text(b.comment, 2000),
      });
      const fromForm = req.headers["content-type"]?.startsWith("application/x-www-form-urlencoded");
      if (answer !== "accepted") {
        if (fromForm)
          return page(reply, req.params.token, claims, `Not recorded: ${answer.replace("_", " ")}.`);
        refuseWait(answer, claims.stepId);
      }
      if (fromForm) return page(reply, req.params.token, claims, `Your decision (${decision}) was recorded.`);
      return reply
        .status(200)
        .send({ accepted: true, task_id: claims.taskId, step_id: claims.stepId, decision });
    });
  });
}
