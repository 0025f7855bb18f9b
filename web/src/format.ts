/** The viewer's time zone, as the browser names it (`Europe/Berlin`); every time shown is in it. */
export const viewerZone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone || "local time";

const fmt = (o: Intl.DateTimeFormatOptions) => new Intl.DateTimeFormat(undefined, { hourCycle: "h23", ...o });
const timeFmt = fmt({ hour: "2-digit", minute: "2-digit", second: "2-digit" });
const dayFmt = fmt({ month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
const yearFmt = fmt({ year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
const preciseFmt = fmt({ hour: "2-digit", minute: "2-digit", second: "2-digit", fractionalSecondDigits: 3 });
const zoneFmt = fmt({ timeZoneName: "short" });

/** The short name of the viewer's zone at `d` (`CET`, `GMT+2`): it changes with daylight saving time. */
export function zoneName(d: Date = new Date()): string {
  return zoneFmt.formatToParts(d).find((p) => p.type === "timeZoneName")?.value ?? "";
}

/** `12:04:05` today, `Mar 3, 12:04` on another day of this year, with the year before that; in the viewer's zone. */
export function shortTime(iso: string | null | undefined, now = new Date()): string {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  if (d.toDateString() === now.toDateString()) return timeFmt.format(d);
  return (d.getFullYear() === now.getFullYear() ? dayFmt : yearFmt).format(d);
}

const clockFmt = fmt({ hour: "2-digit", minute: "2-digit" });

/** `14:05` in the viewer's zone: a chart's axis, where the day is plain from the window. */
export function clockTime(iso: string): string {
  return clockFmt.format(new Date(iso));
}

/** Time of day with milliseconds, for a timeline where events land within the same second. */
export function preciseTime(iso: string): string {
  return preciseFmt.format(new Date(iso));
}

/** The exact instant in UTC, for a tooltip: `2026-03-03T11:04:05.120Z (UTC)`. */
export function utcTitle(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${d.toISOString()} (UTC)`;
}

/** A `datetime-local` input's value (`2026-03-03T12:04`, the viewer's zone) as ISO UTC; "" stays "". */
export function localInputToIso(value: string): string {
  if (!value) return "";
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? "" : d.toISOString();
}

/** ISO UTC as a `datetime-local` input's value in the viewer's zone. */
export function isoToLocalInput(iso: string): string {
  const d = new Date(iso);
  if (!iso || Number.isNaN(d.getTime())) return "";
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return "—";
  const s = Math.round((now - new Date(iso).getTime()) / 1000);
  if (s < 0) return `in ${span(-s)}`;
  if (s < 5) return "just now";
  return `${span(s)} ago`;
}

/** Whole seconds as `42 s`, `5 min`, `3 h`, `2 d`. */
export function span(s: number): string {
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 86_400) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} d`;
}

export const plural = (n: number, one: string, many = `${one}s`) =>
  `${n.toLocaleString()} ${n === 1 ? one : many}`;

export const label = (s: string) => s.replace(/_/g, " ");

export function json(v: unknown): string {
  if (v === undefined) return "";
  try {
    return JSON.stringify(v, null, 2);
  } catch {
    return String(v);
  }
}

/** The relative path of an absolute link, so actions go to the server that served the page. */
export function pathOf(url: string): string {
  try {
    const u = new URL(url, location.href);
    return u.pathname + u.search;
  } catch {
    return url;
  }
}

/** A size in bytes as people read it: `512 B`, `1.5 KiB`, `5.0 MiB`, `2.1 GiB`. */
export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}
