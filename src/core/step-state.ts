/**
 * Step states. A step is `running` while `step.run` code is being attempted, `waiting` while
 * it is suspended on something outside (a job, a callback, a timer). Terminal states are
 * final (ARCHITECTURE §3.3): a step's outcome is stored once.
 */
export const stepStatuses = ["running", "waiting", "succeeded", "failed", "timed_out", "canceled"] as const;
export type StepStatus = (typeof stepStatuses)[number];

export const stepKinds = ["run", "job", "callback", "approval", "sleep", "wait_event"] as const;
export type StepKind = (typeof stepKinds)[number];
