import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import type { ErrorInfo } from "../../src/client/index.ts";
import type { ApiError } from "./api.ts";
import { CLAIM_LABEL, CLAIM_TITLE } from "./decided-by.ts";
import { hintFor } from "./error-hints.ts";
import { ago, json, label, shortTime, utcTitle, zoneName } from "./format.ts";
import type { LiveState } from "./live.ts";

export function Badge({ status, children }: { status: string; children?: ComponentChildren }) {
  return <span class={`badge s-${status}`}>{children ?? label(status)}</span>;
}

/** A time in the viewer's zone, named, and how long ago; the tooltip gives the instant in UTC. */
export function When({ at, relative = true }: { at: string | null | undefined; relative?: boolean }) {
  if (!at) return <span class="muted">—</span>;
  return (
    <time dateTime={at} title={utcTitle(at)}>
      {shortTime(at)} <span class="zone">{zoneName(new Date(at))}</span>
      {relative ? <span class="muted"> · {ago(at)}</span> : null}
    </time>
  );
}

const liveText: Record<LiveState, string> = {
  connecting: "Connecting…",
  open: "Live",
  retrying: "Reconnecting…",
  unavailable: "Polling",
  polling: "Polling every few seconds",
  unauthorized: "Signed out",
};

export function LiveDot({ state }: { state: LiveState }) {
  const title =
    state === "polling"
      ? "This server has no event stream (GET /v1/events); the view reloads every few seconds instead."
      : state === "retrying"
        ? "The event stream dropped; reconnecting, and resuming from the last event seen."
        : "Updates arrive over the event stream as they happen.";
  return (
    <span class={`live live-${state}`} title={title} data-live={state}>
      <span class="dot" />
      {liveText[state]}
    </span>
  );
}

/** Lines of JSON shown before the rest is folded behind "Show all". */
export const JSON_FOLD_LINES = 24;

/**
 * JSON, pretty-printed. Beyond `JSON_FOLD_LINES` lines it is folded, with a control to show
 * the rest; long lines scroll inside the pane instead of widening the page.
 */
export function Json({
  value,
  open = false,
  url,
}: {
  value: unknown;
  open?: boolean;
  url?: string | undefined;
}) {
  const [all, setAll] = useState(false);
  // A value too large to answer inline comes as a signed link that opens without the key.
  if (url !== undefined)
    return (
      <a href={url} target="_blank" rel="noreferrer" class="json-link">
        Open the JSON (large; the link expires)
      </a>
    );
  if (value === undefined || value === null) return <span class="muted">null</span>;
  const text = json(value);
  const lines = text.split("\n");
  const folded = !all && lines.length > JSON_FOLD_LINES;
  return (
    <details class="json" open={open}>
      <summary>
        {Array.isArray(value) ? `[${value.length}]` : typeof value === "object" ? "{…}" : String(value)}
      </summary>
      <pre class={folded ? "folded" : ""} data-lines={lines.length}>
        {folded ? `${lines.slice(0, JSON_FOLD_LINES).join("\n")}\n…` : text}
      </pre>
      {lines.length > JSON_FOLD_LINES ? (
        <button type="button" class="link small json-toggle" onClick={() => setAll((a) => !a)}>
          {all ? "Fold" : `Show all ${lines.length.toLocaleString()} lines`}
        </button>
      ) : null}
    </details>
  );
}

/** A stored error with what to do about it. */
export function ErrorCard({
  error,
  title,
  kind,
}: {
  error: ErrorInfo;
  title?: string;
  kind?: string | undefined;
}) {
  return (
    <div class="error-card" role="alert">
      <div class="error-head">
        {title ? <strong>{title}</strong> : null}
        <code>{error.code}</code>
      </div>
      <p class="error-message">{error.message}</p>
      <p class="error-hint">
        <span>What to do:</span> {hintFor(error, kind)}
      </p>
    </div>
  );
}

/** A failed request, or a "not available" state for an endpoint this server does not have. */
export function RequestError({ error, what }: { error: ApiError; what: string }) {
  if (error.status === 404 && error.code === "NOT_FOUND") {
    return (
      <div class="notice">
        <strong>{what} is not available on this server.</strong> It answers 404 for this endpoint; the view
        works once the server provides it.
      </div>
    );
  }
  return (
    <div class="notice notice-error" role="alert">
      <strong>{what} could not be loaded.</strong> {error.message} <code>{error.code}</code>
    </div>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <div class="empty">{children}</div>;
}

export function CopyText({ text }: { text: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <span class="copy">
      <code>{text}</code>
      <button
        type="button"
        class="link"
        onClick={() =>
          navigator.clipboard?.writeText(text).then(
            () => {
              setCopied(true);
              setTimeout(() => setCopied(false), 1200);
            },
            () => {},
          )
        }
      >
        {copied ? "copied" : "copy"}
      </button>
    </span>
  );
}

/** " (claimed)" after a name typed on an anonymous approval link; nothing for a verified one. */
export function ClaimMark({ claimed }: { claimed: boolean }) {
  if (!claimed) return null;
  return (
    <>
      {" "}
      <span class="claim" title={CLAIM_TITLE}>
        ({CLAIM_LABEL})
      </span>
    </>
  );
}
