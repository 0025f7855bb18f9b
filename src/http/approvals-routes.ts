import type { FastifyInstance, FastifyReply } from "fastify";
import type { Clock } from "../core/clock.ts";
import { LonghaulError } from "../core/errors.ts";
import type { Store } from "../store/store.ts";
import type { CapabilityUrls } from "../tokens/capability-urls.ts";
import type { Keyring } from "../tokens/keyring.ts";
import { type TokenClaims, verifyToken } from "../tokens/token.ts";
import { renderApprovalPage } from "./approval-page.ts";
import { refuseWait } from "./wait-answer.ts";

const pageHeaders = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
};

/** `GET|POST /v1/approvals/:token`: the approval page, and the decision (JSON, or the page's form). */
export function approvalsRoutes(
  app: FastifyInstance,
  d: { store: Store; keyring: Keyring; urls: CapabilityUrls; clock: Clock },
): void {
  const claimsOf = (token: string): TokenClaims & { purpose: "approve" | "reject" } => {
    const claims = verifyToken(d.keyring, token, d.clock.now());
    if (claims.purpose !== "approve" && claims.purpose !== "reject") {
      throw new LonghaulError(
        "FORBIDDEN",
        "This link is a callback URL, not an approval; POST the result to it.",
      );
    }
    return claims as TokenClaims & { purpose: "approve" | "reject" };
  };

  const page = async (reply: FastifyReply, claims: TokenClaims, notice: string | null) => {
    const found = await d.store.stepForToken(claims.tenantId, claims.taskId, claims.stepId);
    if (!found) throw new LonghaulError("TASK_NOT_FOUND", "The task of this link no longer exists.");
    const step = { stepId: claims.stepId, attempts: claims.attempt, deadlineAt: found.step.deadlineAt };
    const html = renderApprovalPage({
      task: found.task,
      step: found.step,
      decisions: await d.store.approvalDecisions(claims.taskId, claims.stepId),
      approver: claims.approver ?? null,
      // Relative, so the form posts back to whatever host served the page.
      approveUrl: new URL(d.urls.approval(claims.tenantId, claims.taskId, step, "approve", claims.approver))
        .pathname,
      rejectUrl: new URL(d.urls.approval(claims.tenantId, claims.taskId, step, "reject", claims.approver))
        .pathname,
      notice,
    });
    return reply.status(200).headers(pageHeaders).send(html);
  };

  app.register(async (scope) => {
    scope.addContentTypeParser(
      "application/x-www-form-urlencoded",
      { parseAs: "string", bodyLimit: 64 * 1024 },
      (_req, body, done) => done(null, Object.fromEntries(new URLSearchParams(String(body)))),
    );

    scope.get<{ Params: { token: string } }>("/v1/approvals/:token", async (req, reply) =>
      page(reply, claimsOf(req.params.token), null),
    );

    scope.post<{ Params: { token: string } }>("/v1/approvals/:token", async (req, reply) => {
      const claims = claimsOf(req.params.token);
      const b = (req.body ?? {}) as Record<string, unknown>;
      const decision = b.decision ?? claims.purpose;
      if (decision !== claims.purpose) {
        throw new LonghaulError(
          "FORBIDDEN",
          `This link can only ${claims.purpose}; use the other link to ${String(decision)}.`,
        );
      }
      const text = (v: unknown, max: number) =>
        typeof v === "string" && v.trim().length > 0 ? v.replaceAll("\u0000", "").trim().slice(0, max) : null;
      const answer = await d.store.decideApproval({
        tenantId: claims.tenantId,
        taskId: claims.taskId,
        stepId: claims.stepId,
        attempt: claims.attempt,
        approver: claims.approver ?? text(b.approver, 200),
        decision: claims.purpose,
        comment: text(b.comment, 2000),
      });
      const fromForm = req.headers["content-type"]?.startsWith("application/x-www-form-urlencoded");
      if (answer !== "accepted") {
        if (fromForm) return page(reply, claims, `Not recorded: ${answer.replace("_", " ")}.`);
        refuseWait(answer, claims.stepId);
      }
      if (fromForm) return page(reply, claims, `Your decision (${claims.purpose}) was recorded.`);
      return reply
        .status(200)
        .send({ accepted: true, task_id: claims.taskId, step_id: claims.stepId, decision: claims.purpose });
    });
  });
}
