import { useEffect, useRef, useState } from "preact/hooks";
import type { StatsBucket, TaskStats } from "../../src/client/index.ts";
import { type ApiError, request } from "./api.ts";
import { clockTime, shortTime, utcTitle, viewerZone } from "./format.ts";
import { useLive } from "./live.ts";
import type { TenantSession } from "./session.ts";
import { Empty, LiveDot, RequestError } from "./ui.tsx";

type Window = "1h" | "24h";
const W = 720;
const H = 180;
const PAD = { l: 44, r: 10, t: 10, b: 22 };

interface Series {
  name: string;
  cls: string;
  value: (b: StatsBucket) => number | null;
}

const throughput: Series[] = [
  { name: "submitted", cls: "c-submitted", value: (b) => b.submitted },
  { name: "succeeded", cls: "c-succeeded", value: (b) => b.succeeded },
  { name: "failed or timed out", cls: "c-failed", value: (b) => b.failed + b.timed_out },
];
const latency: Series[] = [
  { name: "p50", cls: "c-p50", value: (b) => b.p50_ms },
  { name: "p95", cls: "c-p95", value: (b) => b.p95_ms },
];

const ms = (v: number) =>
  v < 1000
    ? `${Math.round(v)} ms`
    : v < 60_000
      ? `${(v / 1000).toFixed(1)} s`
      : `${(v / 60_000).toFixed(1)} min`;

/** A line chart of each series over the buckets, as inline SVG; a gap where a series has no value. */
function Chart({
  stats,
  series,
  unit,
  label,
}: {
  stats: TaskStats;
  series: Series[];
  unit: (v: number) => string;
  label: string;
}) {
  const n = stats.buckets.length;
  const max = Math.max(1, ...stats.buckets.flatMap((b) => series.map((s) => s.value(b) ?? 0)));
  const x = (i: number) => PAD.l + ((W - PAD.l - PAD.r) * (i + 0.5)) / n;
  const y = (v: number) => PAD.t + (H - PAD.t - PAD.b) * (1 - v / max);
  const ticks = [0, 0.5, 1].map((f) => f * max);
  const every = Math.ceil(n / 6);
  return (
    <figure class="chart" data-chart={label}>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={label}>
        {ticks.map((t) => (
          <g key={t}>
            <line class="grid" x1={PAD.l} x2={W - PAD.r} y1={y(t)} y2={y(t)} />
            <text class="axis" x={PAD.l - 4} y={y(t) + 4} text-anchor="end">
              {unit(t)}
            </text>
          </g>
        ))}
        {stats.buckets.map((b, i) =>
          i % every === 0 ? (
            <text key={b.start} class="axis" x={x(i)} y={H - 6} text-anchor="middle">
              {clockTime(b.start)}
            </text>
          ) : null,
        )}
        {series.map((s) => {
          let d = "";
          let pen = false;
          stats.buckets.forEach((b, i) => {
            const v = s.value(b);
            if (v === null) {
              pen = false;
              return;
            }
            d += `${pen ? "L" : "M"}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
            pen = true;
          });
          // A dot on each value, so a bucket alone between gaps still shows.
          return (
            <g key={s.name}>
              <path class={`line ${s.cls}`} d={d} data-series={s.name} />
              {stats.buckets.map((b, i) => {
                const v = s.value(b);
                return v === null || (v === 0 && n > 1) ? null : (
                  <circle key={b.start} class={`dot ${s.cls}`} cx={x(i)} cy={y(v)} r={2.5} />
                );
              })}
            </g>
          );
        })}
        {stats.buckets.map((b, i) => (
          <rect
            key={b.start}
            class="hit"
            x={x(i) - (W - PAD.l - PAD.r) / n / 2}
            y={PAD.t}
            width={(W - PAD.l - PAD.r) / n}
            height={H - PAD.t - PAD.b}
          >
            <title>
              {`${shortTime(b.start)} (${utcTitle(b.start)})\n`}
              {series.map((s) => `${s.name}: ${s.value(b) === null ? "—" : unit(s.value(b)!)}`).join("\n")}
            </title>
          </rect>
        ))}
      </svg>
      <figcaption>
        {series.map((s) => (
          <span key={s.name} class={`key ${s.cls}`}>
            {s.name}
          </span>
        ))}
      </figcaption>
    </figure>
  );
}

/** Throughput and latency over the last hour or day, from `GET /v1/stats/tasks`. */
export function Stats({ session }: { session: TenantSession }) {
  const [win, setWin] = useState<Window>("1h");
  const [stats, setStats] = useState<TaskStats | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const generation = useRef(0);
  const load = async () => {
    const mine = ++generation.current;
    try {
      const s = await request<TaskStats>(`/v1/stats/tasks?window=${win}`, { key: session.key });
      if (mine === generation.current) {
        setStats(s);
        setError(null);
      }
    } catch (err) {
      if (mine === generation.current) setError(err as ApiError);
    }
  };
  useEffect(() => {
    void load();
  }, [win, session.key]);
  const live = useLive({ apiKey: session.key, refresh: () => void load(), throttleMs: 2000 });
  const sum = (f: (b: StatsBucket) => number) => stats?.buckets.reduce((n, b) => n + f(b), 0) ?? 0;

  return (
    <section class="page">
      <header class="page-head">
        <div>
          <h1>Stats</h1>
          <p class="muted">
            Tasks submitted and ended per {stats ? `${stats.bucket_s / 60}-minute` : ""} bucket, and how long
            they took from submit to end (canceled tasks left out). Times in {viewerZone()}.
          </p>
        </div>
        <div class="head-actions">
          <fieldset class="segmented" aria-label="Window">
            {(["1h", "24h"] as const).map((w) => (
              <button
                type="button"
                key={w}
                class={w === win ? "on" : ""}
                aria-pressed={w === win}
                onClick={() => setWin(w)}
              >
                {w === "1h" ? "Last hour" : "Last day"}
              </button>
            ))}
          </fieldset>
          <LiveDot state={live} />
        </div>
      </header>
      {error ? <RequestError error={error} what="The task stats" /> : null}
      {stats === null ? (
        error ? null : (
          <Empty>Loading…</Empty>
        )
      ) : (
        <>
          <dl class="facts" data-window={stats.window}>
            <div>
              <dt>Submitted</dt>
              <dd data-total="submitted">{sum((b) => b.submitted).toLocaleString()}</dd>
            </div>
            <div>
              <dt>Succeeded</dt>
              <dd data-total="succeeded">{sum((b) => b.succeeded).toLocaleString()}</dd>
            </div>
            <div>
              <dt>Failed or timed out</dt>
              <dd>{sum((b) => b.failed + b.timed_out).toLocaleString()}</dd>
            </div>
            <div>
              <dt>p50 / p95</dt>
              <dd>
                {stats.p50_ms === null ? "—" : ms(stats.p50_ms)} /{" "}
                {stats.p95_ms === null ? "—" : ms(stats.p95_ms)}
              </dd>
            </div>
          </dl>
          {stats.complete_from !== stats.from ? (
            <div class="notice">
              More tasks than one request reads: the counts are whole from {shortTime(stats.complete_from)}{" "}
              on.
            </div>
          ) : null}
          <div class="card">
            <h2>Throughput</h2>
            <Chart stats={stats} series={throughput} unit={(v) => String(Math.round(v))} label="throughput" />
          </div>
          <div class="card">
            <h2>Latency</h2>
            <Chart stats={stats} series={latency} unit={ms} label="latency" />
          </div>
        </>
      )}
    </section>
  );
}
