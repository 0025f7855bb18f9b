import type { Clock } from "../core/clock.ts";
import { READ_TOKEN_TTL_S } from "../core/read-scope.ts";
import type { Keyring } from "./keyring.ts";
import { mintReadToken } from "./read-token.ts";
import { mintToken, type TokenPurpose } from "./token.ts";

/** What a capability URL is minted from: a stored wait step. Its deadline is the token's expiry. */
export interface WaitingStep {
  stepId: string;
  attempts: number;
  deadlineAt: number | null;
}

/**
 * Mints the URLs handed out for waits. Tokens are a pure function of the step and the key,
 * so the same stored step always yields the same URL: replay hands out the link it handed
 * out before, and the task view can show it without storing it.
 */
export class CapabilityUrls {
  constructor(
    private readonly keyring: Keyring,
    private readonly baseUrl: () => string,
    private readonly defaultLifetimeMs: number,
    /** A step without a deadline gets one `defaultLifetimeMs` from this clock's now. */
    private readonly clock: Clock,
    /**
     * Links outlive their step's deadline by this much, only so that a late call is
     * recognized and kept as a late result (ARCHITECTURE §4.4); past the deadline they never
     * resume anything, and the API answers 410.
     */
    private readonly lateGraceMs = 24 * 3_600_000,
  ) {}

  private token(
    tenantId: string,
    taskId: string,
    step: WaitingStep,
    purpose: TokenPurpose,
    approver?: string,
  ): string {
    return mintToken(this.keyring, {
      tenantId,
      taskId,
      stepId: step.stepId,
      attempt: step.attempts,
      purpose,
      expiresAt: (step.deadlineAt ?? this.clock.now() + this.defaultLifetimeMs) + this.lateGraceMs,
      ...(approver ? { approver } : {}),
    });
  }

  /**
   * A path of this deployment (`/v1/…`) as a link: absolute under the public URL when one is
   * known, else the path as it is.
   */
  link(path: string): string {
    try {
      return `${this.baseUrl()}${path}`;
    } catch {
      return path;
    }
  }

  /**
   * A link to one of a task's values (`/v1/tasks/:id/output`, …) that opens without the API
   * key: the path with a read token of the task in its query, expiring after a read token's
   * default lifetime, or by `notAfter` if sooner: a link minted for a read token's holder
   * expires with that token, so links never renew a read token. It opens what any read token of
   * the task opens (ARCHITECTURE §4.5).
   */
  payload(tenantId: string, taskId: string, path: string, notAfter = Number.POSITIVE_INFINITY): string {
    const token = mintReadToken(this.keyring, {
      tenantId,
      scope: { taskId },
      expiresAt: Math.min(this.clock.now() + READ_TOKEN_TTL_S.default * 1000, notAfter),
    });
    return this.link(`${path}?token=${token}`);
  }

  callback(tenantId: string, taskId: string, step: WaitingStep): string {
    return `${this.baseUrl()}/v1/callbacks/${this.token(tenantId, taskId, step, "callback")}`;
  }

  approval(
    tenantId: string,
    taskId: string,
    step: WaitingStep,
    purpose: "approve" | "reject" | "decide",
    approver?: string,
  ): string {
    return `${this.baseUrl()}/v1/approvals/${this.token(tenantId, taskId, step, purpose, approver)}`;
  }
}
