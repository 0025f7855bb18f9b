import { useEffect, useState } from "preact/hooks";
import type { ErrorInfo, Usage as UsageJson } from "../../src/client/index.ts";
import { Quotas } from "./admin-tenants.tsx";
import { type ApiError, request } from "./api.ts";
import { label } from "./format.ts";
import { href } from "./router.ts";
import type { TenantSession } from "./session.ts";
import { Empty, RequestError, When } from "./ui.tsx";

/** The signed-in tenant's usage (`GET /v1/usage`): tasks, jobs, tokens by day, quotas. */
export function UsageView({ session }: { session: TenantSession }) {
  const [u, setU] = useState<UsageJson | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  useEffect(() => {
    request<UsageJson>("/v1/usage", { key: session.key }).then(setU, (err) => setError(err as ApiError));
  }, [session.key]);
  if (error) return <RequestError error={error} what="Usage" />;
  if (!u) return <Empty>Loading…</Empty>;
  const days = u.days ?? [];
  const peak = Math.max(1, ...days.map((d) => d.tokens));
  return (
    <div>
      <dl class="facts">
        <div>
          <dt>Tenant</dt>
          <dd class="mono">{u.tenant_id}</dd>
        </div>
        <div>
          <dt>Tokens used</dt>
          <dd>{u.tokens_used?.toLocaleString() ?? "—"}</dd>
        </div>
        <div>
          <dt>Jobs running</dt>
          <dd>{u.jobs_running ?? "—"}</dd>
        </div>
        {Object.entries(u.tasks ?? {}).map(([s, n]) => (
          <div key={s}>
            <dt>Tasks {label(s)}</dt>
            <dd>{n.toLocaleString()}</dd>
          </div>
        ))}
      </dl>
      <div class="card">
        <h2>Quotas</h2>
        <Quotas quotas={u.quotas} tokensUsed={u.budget?.tokens_used ?? u.tokens_used} />
      </div>
      {days.length ? (
        <div class="card">
          <h2>By day</h2>
          <table>
            <thead>
              <tr>
                <th>Day</th>
                <th>Tasks</th>
                <th>Jobs</th>
                <th>Failed jobs</th>
                <th>Tokens</th>
              </tr>
            </thead>
            <tbody>
              {days.map((d) => (
                <tr key={d.day}>
                  <td class="mono">{d.day}</td>
                  <td>{d.tasks_submitted.toLocaleString()}</td>
                  <td>{d.jobs_created.toLocaleString()}</td>
                  <td>{d.jobs_failed.toLocaleString()}</td>
                  <td>
                    <div class="bar-cell">
                      <div class="meter">
                        <span style={{ width: `${(d.tokens / peak) * 100}%` }} />
                      </div>
                      {d.tokens.toLocaleString()}
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {u.recent_job_failures?.length ? (
        <div class="card">
          <h2>Recent job failures</h2>
          <ul class="plain">
            {u.recent_job_failures.map((f) => (
              <li key={`${f.task_id}/${f.step_id}`}>
                <When at={f.at} /> · <a href={href(`tasks/${f.task_id}`)}>{f.task_id}</a> step{" "}
                <span class="mono">{f.step_id}</span> at {f.provider}:{" "}
                <code>{(f.error as ErrorInfo | null)?.code}</code> {(f.error as ErrorInfo | null)?.message}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
    </div>
  );
}
