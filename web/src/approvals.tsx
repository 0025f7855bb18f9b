import { useEffect, useRef, useState } from "preact/hooks";
import type { Page, TaskStep as Step, TaskDetail, TaskSummary } from "../../src/client/index.ts";
import { ApiError, query, request } from "./api.ts";
import { ApprovalForm, Decisions } from "./approval-form.tsx";
import type { TaskEvent } from "./event-stream.ts";
import { useLive } from "./live.ts";
import { href } from "./router.ts";
import type { TenantSession } from "./session.ts";
import { Empty, Json, LiveDot, RequestError, When } from "./ui.tsx";

const PAGE_SIZE = 50;
const PARALLEL = 4;

/** Runs `fn` over `items`, at most `limit` at a time. */
async function mapLimited<T, R>(items: T[], limit: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/**
 * Every waiting approval of the tenant: the waiting tasks, newest first, and their approval
 * steps. A task's detail is fetched when it first shows up and again only when an event
 * names it, so a live inbox costs one list request per burst of events.
 */
export function Approvals({ session }: { session: TenantSession }) {
  const [tasks, setTasks] = useState<TaskDetail[] | null>(null);
  const [pages, setPages] = useState(1);
  const [more, setMore] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const cache = useRef(new Map<string, TaskDetail>());
  const dirty = useRef(new Set<string>());
  const generation = useRef(0);

  const load = async () => {
    const mine = ++generation.current;
    try {
      const waiting: TaskSummary[] = [];
      let cursor: string | null = null;
      for (let i = 0; i < pages; i++) {
        const page: Page<TaskSummary> = await request<Page<TaskSummary>>(
          `/v1/tasks${query({ status: "waiting", limit: PAGE_SIZE, cursor })}`,
          { key: session.key },
        );
        waiting.push(...page.data);
        cursor = page.next_cursor;
        if (!cursor) break;
      }
      const changed = new Set(dirty.current);
      dirty.current.clear();
      const details = await mapLimited(waiting, PARALLEL, async (t) => {
        const cached = cache.current.get(t.task_id);
        if (cached && !changed.has(t.task_id) && cached.updated_at === t.updated_at) return cached;
        try {
          return await request<TaskDetail>(`/v1/tasks/${encodeURIComponent(t.task_id)}`, {
            key: session.key,
          });
        } catch (err) {
          if (err instanceof ApiError && err.status === 404) return null;
          throw err;
        }
      });
      if (mine !== generation.current) return;
      cache.current = new Map(details.flatMap((d) => (d ? [[d.task_id, d] as const] : [])));
      setTasks([...cache.current.values()]);
      setMore(cursor !== null);
      setError(null);
    } catch (err) {
      if (mine === generation.current) setError(err as ApiError);
    }
  };

  useEffect(() => {
    void load();
  }, [session.key, pages]);

  const polling = useRef(false);
  const live = useLive({
    apiKey: session.key,
    onEvent: (e: TaskEvent) => dirty.current.add(e.task_id),
    refresh: () => {
      // Without the event stream nothing says which task changed: read them all again.
      if (polling.current) for (const id of cache.current.keys()) dirty.current.add(id);
      void load();
    },
    throttleMs: 800,
  });
  polling.current = live === "polling";

  const items = (tasks ?? []).flatMap((t) =>
    t.steps.filter((s) => s.kind === "approval" && s.status === "waiting").map((s) => ({ task: t, step: s })),
  );

  return (
    <section class="page">
      <header class="page-head">
        <div>
          <h1>Approvals</h1>
          <p class="muted">Every approval step waiting for a decision. Deciding here resumes the task.</p>
        </div>
        <LiveDot state={live} />
      </header>
      {error ? <RequestError error={error} what="The approval inbox" /> : null}
      {tasks === null ? (
        error ? null : (
          <Empty>Loading…</Empty>
        )
      ) : items.length === 0 ? (
        <Empty>Nothing waits for approval.</Empty>
      ) : (
        items.map(({ task, step }) => (
          <ApprovalCard
            key={`${task.task_id}/${step.id}`}
            task={task}
            step={step}
            onDecided={() => {
              dirty.current.add(task.task_id);
              void load();
            }}
          />
        ))
      )}
      {more ? (
        <button type="button" onClick={() => setPages((p) => p + 1)}>
          Load older waiting tasks
        </button>
      ) : null}
    </section>
  );
}

function ApprovalCard({ task, step, onDecided }: { task: TaskDetail; step: Step; onDecided: () => void }) {
  return (
    <article class="card approval" data-task={task.task_id}>
      <header class="approval-head">
        <div>
          <a href={href(`tasks/${task.task_id}`)} class="mono">
            {task.task_id}
          </a>{" "}
          <span class="mono muted">{task.type}</span>
        </div>
        <div class="muted small">
          step <span class="mono">{step.id}</span> · waiting since <When at={step.created_at} />
        </div>
      </header>
      {step.approvals?.some((a) => a.approver) ? (
        <p class="small">
          Approvers: {step.approvals.map((a) => a.approver).join(", ")}
          {step.quorum ? ` · quorum ${step.quorum}` : ""}
        </p>
      ) : null}
      <Decisions step={step} />
      <details class="small">
        <summary>Task input</summary>
        <Json value={task.input} open />
      </details>
      <ApprovalForm step={step} onDecided={onDecided} />
    </article>
  );
}
