import { useEffect, useRef, useState } from "preact/hooks";
import type { Page, TaskStatus, TaskSummary } from "../../src/client/index.ts";
import { ApiError, query, request } from "./api.ts";
import type { TaskEvent } from "./event-stream.ts";
import { isoToLocalInput, label, localInputToIso, viewerZone } from "./format.ts";
import { useLive } from "./live.ts";
import { go, href, type Route } from "./router.ts";
import type { TenantSession } from "./session.ts";
import { taskStatuses } from "./task-status.ts";
import { Badge, Empty, LiveDot, RequestError, When } from "./ui.tsx";

/** Rows per page: the list never renders more, however many tasks the tenant has. */
const PAGE_SIZE = 50;
const filterNames = ["status", "type", "user_id", "trace_id", "created_after", "created_before"] as const;
type Filters = Record<(typeof filterNames)[number], string>;

function filtersOf(params: URLSearchParams): Filters {
  return Object.fromEntries(filterNames.map((n) => [n, params.get(n) ?? ""])) as Filters;
}

/**
 * Loads one page. Filtering by user or trace id or by when a task was created needs a server
 * that knows those filters; an older one refuses them (400) or ignores them, and then this page
 * is filtered here instead, which the view says.
 */
async function loadPage(
  key: string,
  f: Filters,
  cursor: string | undefined,
): Promise<{ page: Page<TaskSummary>; localFilter: boolean }> {
  const base = { status: f.status, type: f.type, limit: PAGE_SIZE, cursor };
  const extra = {
    user_id: f.user_id,
    trace_id: f.trace_id,
    created_after: f.created_after,
    created_before: f.created_before,
  };
  const at = (iso: string) => Date.parse(iso);
  const wanted = (t: TaskSummary) =>
    (!f.user_id || t.user_id === f.user_id) &&
    (!f.trace_id || t.trace_id === f.trace_id) &&
    (!f.created_after || at(t.created_at) >= at(f.created_after)) &&
    (!f.created_before || at(t.created_at) < at(f.created_before));
  const narrowed = Boolean(f.user_id || f.trace_id || f.created_after || f.created_before);
  let page: Page<TaskSummary>;
  try {
    page = await request<Page<TaskSummary>>(`/v1/tasks${query({ ...base, ...extra })}`, { key });
  } catch (err) {
    // A 400 naming one of our own fields is an answer to show, not an older server.
    if (
      !(err instanceof ApiError && err.status === 400 && narrowed) ||
      /created_(after|before)/.test(err.message)
    )
      throw err;
    page = await request<Page<TaskSummary>>(`/v1/tasks${query(base)}`, { key });
    return { page: { ...page, data: page.data.filter(wanted) }, localFilter: true };
  }
  const ignored = page.data.some((t) => !wanted(t));
  return { page: ignored ? { ...page, data: page.data.filter(wanted) } : page, localFilter: ignored };
}

export function TaskList({ session, route }: { session: TenantSession; route: Route }) {
  const filters = filtersOf(route.params);
  const filterKey = JSON.stringify(filters);
  const [cursors, setCursors] = useState<string[]>([]);
  const [rows, setRows] = useState<TaskSummary[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [localFilter, setLocalFilter] = useState(false);
  const [fresh, setFresh] = useState<Set<string>>(new Set());
  const seen = useRef<Set<string> | null>(null);
  const generation = useRef(0);
  const cursor = cursors.at(-1);

  const load = async () => {
    const mine = ++generation.current;
    try {
      const r = await loadPage(session.key, filters, cursor);
      if (mine !== generation.current) return;
      const before = seen.current;
      const ids = r.page.data.map((t) => t.task_id);
      setFresh(new Set(before ? ids.filter((id) => !before.has(id)) : []));
      seen.current = new Set(ids);
      setRows(r.page.data);
      setNext(r.page.next_cursor);
      setLocalFilter(r.localFilter);
      setError(null);
    } catch (err) {
      if (mine === generation.current) setError(err as ApiError);
    }
  };

  useEffect(() => {
    setCursors([]);
    seen.current = null;
  }, [filterKey]);
  useEffect(() => {
    void load();
  }, [filterKey, cursor, session.key]);

  const onEvent = (e: TaskEvent) => {
    if (!e.type.startsWith("task.") || e.type === "task.created") return;
    const status = e.type.slice(5) as TaskStatus;
    if (!taskStatuses.includes(status)) return;
    setRows(
      (rs) =>
        rs?.map((t) =>
          t.task_id === e.task_id ? { ...t, status, updated_at: e.created_at ?? t.updated_at } : t,
        ) ?? rs,
    );
  };
  const live = useLive({ apiKey: session.key, onEvent, refresh: () => void load() });

  const setFilter = (name: keyof Filters, value: string) => {
    // From the route as it is now: a text filter's delayed change must not undo one made since.
    const now = filtersOf(new URLSearchParams(location.hash.split("?")[1] ?? ""));
    const f = { ...now, [name]: value.trim() };
    go(href("tasks", f), true);
  };

  return (
    <section class="page">
      <header class="page-head">
        <div>
          <h1>Tasks</h1>
          <p class="muted">
            Newest first, {PAGE_SIZE} per page. New tasks and status changes appear as they happen.
          </p>
        </div>
        <LiveDot state={live} />
      </header>

      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filters">
        <label>
          Status
          <select
            name="status"
            value={filters.status}
            onChange={(e) => setFilter("status", (e.target as HTMLSelectElement).value)}
          >
            <option value="">any</option>
            {taskStatuses.map((s) => (
              <option value={s} key={s}>
                {label(s)}
              </option>
            ))}
          </select>
        </label>
        <TextFilter
          name="type"
          label="Type"
          placeholder="demo.echo"
          value={filters.type}
          onChange={setFilter}
        />
        <TextFilter
          name="user_id"
          label="User id"
          placeholder="u_123"
          value={filters.user_id}
          onChange={setFilter}
        />
        <TextFilter
          name="trace_id"
          label="Trace id"
          placeholder="trace id"
          value={filters.trace_id}
          onChange={setFilter}
        />
        <DateFilter
          name="created_after"
          label="Created from"
          value={filters.created_after}
          onChange={setFilter}
        />
        <DateFilter
          name="created_before"
          label="Created before"
          value={filters.created_before}
          onChange={setFilter}
        />
        {filterNames.some((n) => filters[n]) ? (
          <button type="button" class="link" onClick={() => go(href("tasks"), true)}>
            Clear filters
          </button>
        ) : null}
      </form>
      <p class="muted small filters-zone">Created times are in {viewerZone()}.</p>
      <GoToTask session={session} />

      {localFilter ? (
        <div class="notice">
          This server does not filter by user id, trace id or created time yet: the rows below are this page's
          matches only.
        </div>
      ) : null}
      {error ? <RequestError error={error} what="The task list" /> : null}

      {rows === null ? (
        error ? null : (
          <Empty>Loading…</Empty>
        )
      ) : rows.length === 0 ? (
        <Empty>
          No tasks{filterNames.some((n) => filters[n]) ? " match these filters" : " yet"}. Submit one with{" "}
          <code>POST /v1/tasks</code>; it shows up here at once.
        </Empty>
      ) : (
        <table class="tasks">
          <thead>
            <tr>
              <th>Status</th>
              <th>Task</th>
              <th>Type</th>
              <th>User</th>
              <th>Trace</th>
              <th>Created</th>
              <th>Updated</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((t) => (
              <tr key={t.task_id} class={fresh.has(t.task_id) ? "row-new" : ""} data-task={t.task_id}>
                <td>
                  <Badge status={t.status} />
                </td>
                <td>
                  <a href={href(`tasks/${t.task_id}`)} class="mono">
                    {t.task_id}
                  </a>
                </td>
                <td class="mono">{t.type}</td>
                <td class="mono">{t.user_id ?? <span class="muted">—</span>}</td>
                <td class="mono ellipsis">{t.trace_id ?? <span class="muted">—</span>}</td>
                <td>
                  <When at={t.created_at} />
                </td>
                <td>
                  <When at={t.updated_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}

      <nav class="pager" aria-label="Pages">
        <button
          type="button"
          disabled={cursors.length === 0}
          onClick={() => setCursors((c) => c.slice(0, -1))}
        >
          ← Newer
        </button>
        <span class="muted">Page {cursors.length + 1}</span>
        <button type="button" disabled={!next} onClick={() => next && setCursors((c) => [...c, next])}>
          Older →
        </button>
      </nav>
    </section>
  );
}

/** A `datetime-local` input in the viewer's zone; the route and the API get ISO UTC. */
function DateFilter(p: {
  name: keyof Filters;
  label: string;
  value: string;
  onChange: (name: keyof Filters, value: string) => void;
}) {
  return (
    <label>
      {p.label}
      <input
        type="datetime-local"
        name={p.name}
        value={isoToLocalInput(p.value)}
        onChange={(e) => p.onChange(p.name, localInputToIso((e.target as HTMLInputElement).value))}
      />
    </label>
  );
}

/** Jumps to the task with exactly this id, or says there is none. */
function GoToTask({ session }: { session: TenantSession }) {
  const [id, setId] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const open = async (e: Event) => {
    e.preventDefault();
    const want = id.trim();
    if (!want) return;
    setBusy(true);
    setError(null);
    try {
      await request(`/v1/tasks/${encodeURIComponent(want)}`, { key: session.key });
      go(href(`tasks/${want}`));
    } catch (err) {
      setError(
        err instanceof ApiError && err.status === 404
          ? `No task ${want} for this tenant.`
          : err instanceof ApiError
            ? `${err.message} (${err.code})`
            : String(err),
      );
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="goto" onSubmit={open} aria-label="Go to a task">
      <label>
        Task id
        <input
          name="task_id"
          value={id}
          placeholder="t_01K…"
          spellcheck={false}
          autocomplete="off"
          onInput={(e) => setId((e.target as HTMLInputElement).value)}
        />
      </label>
      <button type="submit" disabled={busy || !id.trim()}>
        Open
      </button>
      {error ? (
        <span class="bad small" role="alert">
          {error}
        </span>
      ) : null}
    </form>
  );
}

function TextFilter(p: {
  name: keyof Filters;
  label: string;
  placeholder: string;
  value: string;
  onChange: (name: keyof Filters, value: string) => void;
}) {
  const [text, setText] = useState(p.value);
  useEffect(() => setText(p.value), [p.value]);
  useEffect(() => {
    if (text.trim() === p.value) return;
    const t = setTimeout(() => p.onChange(p.name, text), 350);
    return () => clearTimeout(t);
  }, [text]);
  return (
    <label>
      {p.label}
      <input
        name={p.name}
        value={text}
        placeholder={p.placeholder}
        spellcheck={false}
        autocomplete="off"
        onInput={(e) => setText((e.target as HTMLInputElement).value)}
      />
    </label>
  );
}
