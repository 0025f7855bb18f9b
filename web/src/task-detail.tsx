import { useEffect, useRef, useState } from "preact/hooks";
import type { TaskDetail, Timeline } from "../../src/client/index.ts";
import { type ApiError, request } from "./api.ts";
import { ApprovalForm, Decisions } from "./approval-form.tsx";
import { bytes, label, plural } from "./format.ts";
import { graphNodes } from "./graph-layout.ts";
import { GraphView } from "./graph-view.tsx";
import { useLive } from "./live.ts";
import { Notifications } from "./notifications.tsx";
import { go, href } from "./router.ts";
import type { TenantSession } from "./session.ts";
import { StepsTable } from "./steps-table.tsx";
import { rerunnable, terminal } from "./task-status.ts";
import { TimelineView } from "./timeline.tsx";
import { Badge, CopyText, Empty, ErrorCard, Json, LiveDot, RequestError, When } from "./ui.tsx";

export function TaskDetailView({ session, id }: { session: TenantSession; id: string }) {
  const [task, setTask] = useState<TaskDetail | null>(null);
  const [timeline, setTimeline] = useState<Timeline | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [timelineError, setTimelineError] = useState<ApiError | null>(null);
  const [canceling, setCanceling] = useState(false);
  const [rerunning, setRerunning] = useState(false);
  const [selected, setSelected] = useState<string | null>(null);
  const firstSeq = useRef<string | undefined>(undefined);
  const generation = useRef(0);

  const load = async () => {
    const mine = ++generation.current;
    const path = `/v1/tasks/${encodeURIComponent(id)}`;
    const [t, tl] = await Promise.allSettled([
      request<TaskDetail>(path, { key: session.key }),
      request<Timeline>(`${path}/timeline`, { key: session.key }),
    ]);
    if (mine !== generation.current) return;
    if (t.status === "fulfilled") {
      setTask(t.value);
      setError(null);
    } else setError(t.reason as ApiError);
    if (tl.status === "fulfilled") {
      const seqs = tl.value.entries.flatMap((e) => (e.kind === "event" ? [e.seq] : []));
      if (firstSeq.current === undefined && seqs.length) firstSeq.current = String(Math.max(...seqs));
      setTimeline(tl.value);
      setTimelineError(null);
    } else setTimelineError(tl.reason as ApiError);
  };

  useEffect(() => {
    setTask(null);
    setTimeline(null);
    firstSeq.current = undefined;
    void load();
  }, [id, session.key]);

  const live = useLive({
    apiKey: session.key,
    taskId: id,
    lastEventId: firstSeq.current,
    enabled: task !== null,
    refresh: () => void load(),
    pollMs: 2000,
  });

  if (error && !task) {
    return (
      <section class="page">
        <a href={href("tasks")} class="back">
          ← Tasks
        </a>
        <RequestError error={error} what={`Task ${id}`} />
      </section>
    );
  }
  if (!task) return <Empty>Loading…</Empty>;

  const cancel = async () => {
    if (!confirm(`Cancel task ${task.task_id}? Its live jobs are canceled at the provider.`)) return;
    setCanceling(true);
    try {
      await request(`/v1/tasks/${encodeURIComponent(task.task_id)}/cancel`, {
        method: "POST",
        key: session.key,
      });
      await load();
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setCanceling(false);
    }
  };

  // A re-run is a new task (the old one never moves): the view goes to it.
  const rerun = async (from: "failed_step" | "start") => {
    setRerunning(true);
    try {
      const r = await request<{ task_id: string }>(`/v1/tasks/${encodeURIComponent(task.task_id)}/rerun`, {
        method: "POST",
        key: session.key,
        body: { from },
      });
      go(href(`tasks/${r.task_id}`));
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setRerunning(false);
    }
  };

  const nodes = task.type === "graph" ? graphNodes(task.input) : null;
  const tokens = task.jobs.reduce((n, j) => n + (j.usage?.total_tokens ?? 0), 0);
  const waitingApprovals = task.steps.filter((s) => s.kind === "approval" && s.status === "waiting");
  // An ended approval keeps its audit: who decided, how, and where its messages went.
  const endedApprovals = task.steps.filter(
    (s) =>
      s.kind === "approval" && s.status !== "waiting" && (s.decisions?.length || s.notifications?.length),
  );
  const waitingCallbacks = task.steps.filter((s) => s.kind === "callback" && s.status === "waiting");
  const failedSteps = task.steps.filter((s) => s.error && s.status !== "succeeded");

  return (
    <section class="page">
      <a href={href("tasks")} class="back">
        ← Tasks
      </a>
      <header class="page-head">
        <div>
          <h1 class="mono">{task.task_id}</h1>
          <p class="subtitle">
            <Badge status={task.status} /> <span class="mono">{task.type}</span>
          </p>
        </div>
        <div class="head-actions">
          <LiveDot state={live} />
          {terminal.has(task.status) ? null : (
            <button type="button" class="danger" disabled={canceling} onClick={cancel}>
              Cancel task
            </button>
          )}
          {rerunnable.has(task.status) ? (
            <>
              <button
                type="button"
                disabled={rerunning}
                onClick={() => void rerun("failed_step")}
                title="A new task with the same input that reuses the steps that succeeded and runs from the failed one"
              >
                Re-run
              </button>
              <button
                type="button"
                disabled={rerunning}
                onClick={() => void rerun("start")}
                title="A new task with the same input that runs every step again"
              >
                Re-run from start
              </button>
            </>
          ) : null}
        </div>
      </header>
      {error ? <RequestError error={error} what="The latest state" /> : null}

      <dl class="facts">
        <Fact name="Created">
          <When at={task.created_at} />
        </Fact>
        <Fact name="Updated">
          <When at={task.updated_at} />
        </Fact>
        <Fact name="Steps">{task.steps.length}</Fact>
        <Fact name="External jobs">{task.jobs.length}</Fact>
        <Fact name="Tokens used">
          <span data-tokens={tokens}>{tokens.toLocaleString()}</span>
        </Fact>
        <Fact name="User">{task.user_id ?? "—"}</Fact>
        <Fact name="Trace">{task.trace_id ?? "—"}</Fact>
        <Fact name="Request id">{task.client_request_id ?? "—"}</Fact>
        {task.rerun_of ? (
          <Fact name="Re-run of">
            <a href={href(`tasks/${task.rerun_of}`)} class="mono" data-rerun-of={task.rerun_of}>
              {task.rerun_of}
            </a>
          </Fact>
        ) : null}
        {task.reruns?.length ? (
          <Fact name="Re-runs">
            {task.reruns.map((r) => (
              <a key={r} href={href(`tasks/${r}`)} class="mono" data-rerun={r}>
                {r}{" "}
              </a>
            ))}
          </Fact>
        ) : null}
      </dl>

      {task.error ? (
        <ErrorCard
          error={task.error}
          title={`The task ${label(task.status)}`}
          kind={failedSteps.find((s) => s.error?.code === task.error?.code)?.kind}
        />
      ) : null}
      {failedSteps
        .filter(
          (s) => !task.error || s.error?.code !== task.error.code || s.error.message !== task.error.message,
        )
        .map((s) => (
          <ErrorCard key={s.id} error={s.error!} title={`Step ${s.id} ${label(s.status)}`} kind={s.kind} />
        ))}

      {waitingApprovals.map((s) => (
        <div class="card attention" key={s.id}>
          <h2>
            Waiting for approval: <span class="mono">{s.id}</span>
          </h2>
          <Decisions step={s} />
          <ApprovalForm step={s} onDecided={() => void load()} />
          <Notifications step={s} />
        </div>
      ))}
      {endedApprovals.map((s) => (
        <div class="card" key={s.id}>
          <h2>
            Approval: <span class="mono">{s.id}</span> {label(s.status)}
          </h2>
          <Decisions step={s} />
          <Notifications step={s} />
        </div>
      ))}
      {waitingCallbacks.map((s) => (
        <div class="card attention" key={s.id}>
          <h2>
            Waiting for a callback: <span class="mono">{s.id}</span>
          </h2>
          <p class="muted small">POST the result as JSON to this capability URL; the task resumes with it.</p>
          {s.callback_url ? <CopyText text={s.callback_url} /> : null}
        </div>
      ))}

      {nodes ? (
        <div class="card">
          <h2>Graph</h2>
          <GraphView task={task} nodes={nodes} onSelect={setSelected} />
        </div>
      ) : null}

      <div class="card">
        <h2>Steps</h2>
        {task.steps.length ? (
          <StepsTable task={task} selected={selected} />
        ) : (
          <p class="muted">No step has run yet.</p>
        )}
      </div>

      {task.artifacts?.length ? (
        <div class="card">
          <h2>
            Artifacts{" "}
            <span class="muted small">{plural(task.artifacts.length, "artifact", "artifacts")}</span>
          </h2>
          <ArtifactsTable artifacts={task.artifacts} apiKey={session.key} />
        </div>
      ) : null}

      <div class="card">
        <h2>
          Timeline{" "}
          <span class="muted small">
            {timeline
              ? plural(timeline.entries.filter((e) => e.kind === "delivery").length, "delivery", "deliveries")
              : ""}
          </span>
        </h2>
        {timelineError ? <RequestError error={timelineError} what="The timeline" /> : null}
        {timeline ? (
          <TimelineView entries={timeline.entries} jobs={task.jobs} truncated={timeline.truncated} />
        ) : null}
      </div>

      <div class="card two">
        <div>
          <h2>Input</h2>
          <Json value={task.input} url={task.input_url} open />
        </div>
        <div>
          <h2>Output</h2>
          <Json value={task.output} url={task.output_url} open />
        </div>
      </div>
    </section>
  );
}

/**
 * The task's artifacts with download links. The API wants the session's key, which a plain
 * link does not send: a click fetches the bytes with it and saves them under the artifact's name.
 */
function ArtifactsTable({ artifacts, apiKey }: { artifacts: TaskDetail["artifacts"]; apiKey: string }) {
  const [failed, setFailed] = useState<string | null>(null);
  const download = async (e: Event, a: TaskDetail["artifacts"][number]) => {
    e.preventDefault();
    setFailed(null);
    try {
      const res = await fetch(a.url, { headers: { authorization: `Bearer ${apiKey}` }, cache: "no-store" });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const url = URL.createObjectURL(await res.blob());
      const link = document.createElement("a");
      link.href = url;
      link.download = a.name;
      link.click();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (err) {
      setFailed(`${a.name}: ${(err as Error).message}`);
    }
  };
  return (
    <>
      <table class="artifacts">
        <thead>
          <tr>
            <th>Name</th>
            <th>Size</th>
            <th>Type</th>
            <th>SHA-256</th>
          </tr>
        </thead>
        <tbody>
          {artifacts.map((a) => (
            <tr key={a.name}>
              <td>
                <a href={a.url} download={a.name} onClick={(e) => download(e, a)}>
                  {a.name}
                </a>
              </td>
              <td title={`${a.size} bytes`}>{bytes(a.size)}</td>
              <td>{a.content_type}</td>
              <td class="mono small" title={a.sha256}>
                {a.sha256.slice(0, 12)}…
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {failed ? <p class="error">The download failed ({failed}).</p> : null}
    </>
  );
}

function Fact({ name, children }: { name: string; children: preact.ComponentChildren }) {
  return (
    <div>
      <dt>{name}</dt>
      <dd>{children}</dd>
    </div>
  );
}
