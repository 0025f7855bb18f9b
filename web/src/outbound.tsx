import { useEffect, useState } from "preact/hooks";
import type {
  WebhookDelivery as Delivery,
  WebhookEndpoint as Endpoint,
  EventSink,
  Page,
} from "../../src/client/index.ts";
import { type ApiError, query, request } from "./api.ts";
import { href } from "./router.ts";
import type { TenantSession } from "./session.ts";
import { Badge, Empty, RequestError, When } from "./ui.tsx";

/** A sink's subject, exchange or stream, as its kind names it. */
const sinkTarget = (s: EventSink) =>
  s.kind === "nats"
    ? `subject ${s.subject}.<task>`
    : s.kind === "rabbitmq"
      ? `exchange ${s.exchange}`
      : `stream ${s.stream}`;

/** The tenant's outbound webhook endpoints and event sinks, and each one's deliveries, with replay. */
export function Outbound({ session }: { session: TenantSession }) {
  const [endpoints, setEndpoints] = useState<Endpoint[] | null>(null);
  const [sinks, setSinks] = useState<EventSink[] | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [open, setOpen] = useState<string | null>(null);

  useEffect(() => {
    Promise.all([
      request<{ data: Endpoint[] }>("/v1/webhook-endpoints", { key: session.key }),
      request<{ data: EventSink[] }>("/v1/sinks", { key: session.key }),
    ]).then(
      ([e, s]) => {
        setEndpoints(e.data);
        setSinks(s.data);
        setOpen((o) => o ?? e.data[0]?.id ?? s.data[0]?.id ?? null);
      },
      (err) => setError(err as ApiError),
    );
  }, [session.key]);

  if (error) return <RequestError error={error} what="Outbound webhooks" />;
  if (!endpoints || !sinks) return <Empty>Loading…</Empty>;
  if (endpoints.length === 0 && sinks.length === 0) {
    return (
      <Empty>
        No webhook endpoints. Add one with <code>POST /v1/webhook-endpoints {"{url, events?}"}</code>; task
        events are then delivered to it, signed with Standard Webhooks. Or publish them to a broker with{" "}
        <code>POST /v1/sinks</code>.
      </Empty>
    );
  }
  return (
    <div>
      {sinks.map((s) => (
        <div class="card sink" key={s.id}>
          <div class="endpoint-head">
            <div>
              <span class="mono">{s.url}</span> <Badge status={s.status} />
              <div class="muted small">
                {s.id} · {s.kind} sink, {sinkTarget(s)} · events: {s.events?.join(", ") ?? "all"}
                {s.disabled_reason ? ` · ${s.disabled_reason}` : ""}
              </div>
            </div>
            <button type="button" class="link" onClick={() => setOpen(open === s.id ? null : s.id)}>
              {open === s.id ? "Hide deliveries" : "Show deliveries"}
            </button>
          </div>
          {open === s.id ? (
            <Deliveries session={session} base={`/v1/sinks/${encodeURIComponent(s.id)}/deliveries`} />
          ) : null}
        </div>
      ))}
      {endpoints.map((e) => (
        <div class="card" key={e.id}>
          <div class="endpoint-head">
            <div>
              <span class="mono">{e.url}</span> {e.status ? <Badge status={e.status} /> : null}
              <div class="muted small">
                {e.id} · events: {e.events?.join(", ") ?? "all"}
                {e.disabled_reason ? ` · ${e.disabled_reason}` : ""}
              </div>
            </div>
            <button type="button" class="link" onClick={() => setOpen(open === e.id ? null : e.id)}>
              {open === e.id ? "Hide deliveries" : "Show deliveries"}
            </button>
          </div>
          {open === e.id ? (
            <Deliveries
              session={session}
              base={`/v1/webhook-endpoints/${encodeURIComponent(e.id)}/deliveries`}
            />
          ) : null}
        </div>
      ))}
    </div>
  );
}

/** One endpoint's or sink's delivery log; `base` is its `…/deliveries` path. */
function Deliveries({ session, base }: { session: TenantSession; base: string }) {
  const [rows, setRows] = useState<Delivery[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [state, setState] = useState("");
  const [error, setError] = useState<ApiError | null>(null);
  const [done, setDone] = useState<Record<string, string>>({});

  const load = (after: string | null) =>
    request<Page<Delivery>>(`${base}${query({ limit: 50, cursor: after, state })}`, {
      key: session.key,
    }).then(
      (p) => {
        setRows((r) => (after && r ? [...r, ...p.data] : p.data));
        setCursor(p.next_cursor);
        setError(null);
      },
      (err) => setError(err as ApiError),
    );
  useEffect(() => {
    void load(null);
  }, [base, state]);

  const replay = async (id: string) => {
    try {
      await request(`${base}/${encodeURIComponent(id)}/replay`, { method: "POST", key: session.key });
      setDone((d) => ({ ...d, [id]: "queued" }));
    } catch (err) {
      setDone((d) => ({ ...d, [id]: (err as Error).message }));
    }
  };

  return (
    <div>
      <label class="inline">
        State{" "}
        <select value={state} onChange={(e) => setState((e.target as HTMLSelectElement).value)}>
          {["", "pending", "delivered", "failed", "dead", "canceled"].map((s) => (
            <option key={s} value={s}>
              {s || "any"}
            </option>
          ))}
        </select>
      </label>
      {error ? <RequestError error={error} what="Deliveries" /> : null}
      {rows === null ? null : rows.length === 0 ? (
        <Empty>No deliveries.</Empty>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Created</th>
              <th>Event</th>
              <th>Task</th>
              <th>State</th>
              <th>Attempts</th>
              <th>Last answer</th>
              <th>Next attempt</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {rows.map((d) => (
              <tr key={d.id}>
                <td>
                  <When at={d.created_at} />
                </td>
                <td class="mono">{d.event?.type ?? "—"}</td>
                <td class="mono">
                  {d.event?.task_id ? <a href={href(`tasks/${d.event.task_id}`)}>{d.event.task_id}</a> : "—"}
                </td>
                <td>{d.state ? <Badge status={d.state} /> : "—"}</td>
                <td>{d.attempts ?? "—"}</td>
                <td class="small">
                  {d.last_status
                    ? `HTTP ${d.last_status}`
                    : d.last_error?.message || (d.state === "delivered" ? "acknowledged" : "—")}
                </td>
                <td>{d.next_attempt_at ? <When at={d.next_attempt_at} /> : <span class="muted">—</span>}</td>
                <td>
                  {done[d.id] ? (
                    <span class="small muted">{done[d.id]}</span>
                  ) : d.state === "delivered" || d.state === "pending" ? null : (
                    <button type="button" onClick={() => replay(d.id)}>
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
          Older deliveries
        </button>
      ) : null}
    </div>
  );
}
