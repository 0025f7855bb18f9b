import { defineTask } from "../core/task-type.ts";
import { optionalTimeout } from "./timeout-input.ts";

/**
 * `demo.approval`: waits on one approval (see `approval_url`); output `{approved, by,
 * claimed_by?, comment}`. Its links name nobody, so a name given is `claimed_by`.
 */
export const demoApproval = defineTask<
  { timeout_s?: number },
  { approved: boolean; by: string | null; claimed_by?: string; comment: string | null }
>(
  "demo.approval",
  async (input, step) => {
    const r = await step.approval("approval", {
      ...optionalTimeout(input),
      title: "Approve the demo task",
      description: "Approve or reject; the task resumes with your decision.",
    });
    return {
      approved: r.approved,
      by: r.by,
      ...(r.claimed_by === undefined ? {} : { claimed_by: r.claimed_by }),
      comment: r.comment,
    };
  },
  { validate: (input) => void optionalTimeout(input as { timeout_s?: number }) },
);
