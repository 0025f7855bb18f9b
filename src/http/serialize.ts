import type { JobRow, StepRow, TaskDetail, TaskRow } from "../store/store.ts";

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The public JSON of a task (DESIGN §7); snake_case on the wire. */
export function taskSummary(t: TaskRow) {
  return {
    task_id: t.id,
    type: t.type,
    status: t.status,
    input: t.input,
    output: t.output,
    error: t.error,
    client_request_id: t.clientRequestId,
    user_id: t.userId,
    trace_id: t.traceId,
    created_at: iso(t.createdAt),
    updated_at: iso(t.updatedAt),
  };
}

function step(s: StepRow, jobs: Map<string, JobRow>) {
  const job = s.jobId ? jobs.get(s.jobId) : undefined;
  return {
    id: s.stepId,
    kind: s.kind,
    status: s.status,
    attempts: s.attempts,
    output: s.output,
    error: s.error,
    ...(job ? { provider: job.provider, job_id: job.externalId } : {}),
    deadline: iso(s.deadlineAt),
    created_at: iso(s.createdAt),
    updated_at: iso(s.updatedAt),
  };
}

function job(j: JobRow) {
  return {
    id: j.id,
    step_id: j.stepId,
    provider: j.provider,
    job_id: j.externalId,
    status: j.status,
    output: j.output,
    error: j.error,
    usage: j.usage,
    created_at: iso(j.createdAt),
    updated_at: iso(j.updatedAt),
  };
}

export function taskDetail(d: TaskDetail) {
  const jobs = new Map(d.jobs.map((j) => [j.id, j]));
  return { ...taskSummary(d.task), steps: d.steps.map((s) => step(s, jobs)), jobs: d.jobs.map(job) };
}
