import { useEffect, useState } from "preact/hooks";
import type { InboxEvent, Page, WebhookRefusal } from "../../src/client/index.ts";
import { ApiError, query, request } from "./api.ts";
import { go, href, type Route } from "./router.ts";
import { Badge, Empty, RequestError, When } from "./ui.tsx";

const statuses = ["unmatched", "invalid", "ignored", "received", "applied"];
/** Not an inbox status: the webhooks refused before anything was recorded. */
const REFUSED = "refused";

/** The inbox: verified inbound events and what became of them, with replay; refused webhooks. */
export function AdminInbox({
  adminKey,
  onUnauthorized,
  route,
}: {
  adminKey: string;
  onUnauthorized: () => void;
  route: Route;
}) {
  const status = route.params.get("status") ?? "unmatched";
  const source = route.params.get("source") ?? "";
  const refused = status === REFUSED;
  const [rows, setRows] = useState<InboxEvent[] | null>(null);
  const [refusals, setRefusals] = useState<WebhookRefusal[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [done, setDone] = useState<Record<string, string>>({});

  const load = async (after: string | null) => {
    try {
      if (refused) {
        const page = await request<Page<WebhookRefusal>>(
          `/v1/admin/webhook-refusals${query({ source, limit: 50, cursor: after })}`,
          { key: adminKey },
        );
        setRefusals((r) => (after && r ? [...r, ...page.data] : page.data));
        setCursor(page.next_cursor);
        setError(null);
        return;
      }
      const page = await request<Page<InboxEvent>>(
        `/v1/admin/events${query({ status: status === "all" ? "" : status, source, limit: 50, cursor: after })}`,
        { key: adminKey },
      );
      setRows((r) => (after && r ? [...r, ...page.data] : page.data));
      setCursor(page.next_cursor);
      setError(null);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) onUnauthorized();
      setError(err as ApiError);
    }
  };
  useEffect(() => {
    setRows(null);
    setRefusals(null);
    void load(null);
  }, [status, source, adminKey]);

  const replay = async (id: string) => {
    try {
      const r = await request<{ status: string }>(`/v1/admin/events/${encodeURIComponent(id)}/replay`, {
        method: "POST",
        key: adminKey,
      });
      setDone((d) => ({ ...d, [id]: `queued (${r.status})` }));
    } catch (err) {
      setDone((d) => ({ ...d, [id]: (err as Error).message }));
    }
  };
  const set = (name: string, value: string) =>
    go(href("admin/inbox", { status, source, [name]: value || undefined }), true);

  return (
    <div>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Status
          <select value={status} onChange={(e) => set("status", (e.target as HTMLSelectElement).value)}>
            {[...statuses, "all", REFUSED].map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Source
          <input
            value={source}
            placeholder="any"
            onChange={(e) => set("source", (e.target as HTMLInputElement).value.trim())}
          />
        </label>
      </form>
      <p class="muted small">
        Unmatched: no job with that id is known yet (it is applied once the job is recorded). Invalid:
        verified but not parseable. Ignored: recorded but not applied (late, out of order, or a second report
        of a state). Replay applies an event again; its effect stays exactly-once.
      </p>
      {refused ? (
        <p class="muted small">
          Refused: webhooks of a configured source answered with a 4xx before anything was recorded (a bad or
          missing signature, a stale timestamp, a body too large or not JSON), counted per source, reason and
          minute. Rate-limited ones are only counted in the metrics. Nothing of their body or headers is kept.
        </p>
      ) : null}
      {error ? <RequestError error={error} what="The inbox" /> : null}
      {refused ? (
        <RefusalsTable rows={refusals} />
      ) : rows === null ? null : rows.length === 0 ? (
        <Empty>No {status === "all" ? "" : `${status} `}events.</Empty>
      ) : (
        <table class="inbox">
          <thead>
            <tr>
              <th>Received</th>
              <th>Source</th>
              <th>Event</th>
              <th>Job</th>
              <th>Status</th>
              <th>Note</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {rows.map((e) => (
              <tr key={e.id}>
                <td>
                  <When at={e.received_at} />
                </td>
                <td class="mono">{e.source}</td>
                <td>
                  <details>
                    <summary class="mono">{e.type ?? e.event_id}</summary>
                    <div class="mono small">{e.event_id}</div>
                    <pre>{e.body}</pre>
                  </details>
                </td>
                <td class="mono">
                  {e.provider}:{e.job_id ?? "—"}
                </td>
                <td>
                  <Badge status={e.status} />
                </td>
                <td class="small">{e.note ?? ""}</td>
                <td>
                  {done[e.id] ? (
                    <span class="small muted">{done[e.id]}</span>
                  ) : (
                    <button type="button" onClick={() => replay(e.id)}>
                      Replay
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {cursor ? (
        <button type="button" onClick={() => load(cursor)}>
          Older events
        </button>
      ) : null}
    </div>
  );
}

/** Refused webhooks, one row per source, reason and minute. */
function RefusalsTable({ rows }: { rows: WebhookRefusal[] | null }) {
  if (rows === null) return null;
  if (rows.length === 0) return <Empty>No refused webhooks.</Empty>;
  return (
    <table class="inbox refusals">
      <thead>
        <tr>
          <th>Last</th>
          <th>Source</th>
          <th>Reason</th>
          <th>Count</th>
          <th>Last request</th>
          <th>From</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.id}>
            <td>
              <When at={r.last_at} />
            </td>
            <td class="mono">{r.source}</td>
            <td class="mono">{r.code}</td>
            <td>{r.count}</td>
            <td class="mono small">{r.last_request_id}</td>
            <td class="mono small">{r.last_remote_address ?? "—"}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
