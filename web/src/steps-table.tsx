import type { TaskDetail } from "../../src/client/index.ts";
import { label } from "./format.ts";
import { Badge, Json, When } from "./ui.tsx";

/** Each step with its job (provider and job id), its tokens and what it is waiting for. */
export function StepsTable({ task, selected }: { task: TaskDetail; selected: string | null }) {
  const jobsByStep = new Map(task.jobs.map((j) => [j.step_id, j]));
  return (
    <table class="steps">
      <thead>
        <tr>
          <th>Step</th>
          <th>Kind</th>
          <th>Status</th>
          <th>Attempts</th>
          <th>External job</th>
          <th>Tokens</th>
          <th>Deadline</th>
          <th>Output</th>
        </tr>
      </thead>
      <tbody>
        {task.steps.map((s) => {
          const job = jobsByStep.get(s.id);
          return (
            <tr key={s.id} class={selected === s.id ? "selected" : ""} data-step={s.id}>
              <td class="mono">{s.id}</td>
              <td>{label(s.kind)}</td>
              <td>
                <Badge status={s.status} />
                {s.late_result !== undefined ? (
                  <span class="badge s-late" title="A result arrived after the deadline; kept, not applied.">
                    late result
                  </span>
                ) : null}
              </td>
              <td>{s.attempts}</td>
              <td class="mono">
                {s.provider ? (
                  <>
                    {s.provider}:{s.job_id ?? "—"} {job ? <Badge status={job.status} /> : null}
                  </>
                ) : (
                  <span class="muted">—</span>
                )}
              </td>
              <td>{job?.usage?.total_tokens?.toLocaleString() ?? <span class="muted">—</span>}</td>
              <td>{s.status === "waiting" ? <When at={s.deadline} /> : <span class="muted">—</span>}</td>
              <td>
                <Json value={s.late_result ?? s.output} url={s.late_result ? undefined : s.output_url} />
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
