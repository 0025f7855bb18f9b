// The two task types of the examples: a job at a provider, and a person's sign-off. Both
// suspend (rows in the store, nothing in memory) until a signed webhook or a decision arrives.
// examples/dev-config/tasks.ts is a copy of this file (the examples' test checks they match).
import { task } from "longhaul";

/** Sends a document to the provider `sim` and suspends until its signed webhook reports the job done. */
export const summarize = task({
  id: "example.summarize",
  retry: { maxAttempts: 3 },
  run: async (input: { document: string }, { step, log }) => {
    const job = await step.job<{ summary: string }>("summarize", {
      provider: "sim",
      input: { instruction: "summarize", document: input.document, delay_ms: 200 },
      timeout: "10m",
    });
    log.info("summary ready", { chars: job.summary.length });
    return { summary: job.summary };
  },
});

/** Waits for one person to approve or reject through the step's link, then reports the decision. */
export const signOff = task({
  id: "example.sign_off",
  run: async (input: { title: string; amount: number }, { step }) => {
    const decision = await step.approval("sign-off", {
      // A named approver gets links that carry the name, so the decision is by her. Without
      // one, the links name nobody and a name typed on the page is only \`claimed_by\`.
      approvers: ["ana@acme.test"],
      title: input.title,
      description: "Approve or reject; the task resumes with the decision.",
      show: ["title", "amount"],
      timeout: "1d",
      onTimeout: "reject",
    });
    return { approved: decision.approved, by: decision.by, comment: decision.comment };
  },
});
