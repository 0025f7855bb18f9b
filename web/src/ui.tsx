import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import type { ErrorInfo } from "../../src/client/index.ts";
import type { ApiError } from "./api.ts";
import { CLAIM_LABEL, CLAIM_TITLE } from "./decided-by.ts";
import { hintFor } from "./error-hints.ts";
import { ago, json, label, shortTime } from "./format.ts";
import type { LiveState } from "./live.ts";

export function Badge({ status, children }: { status: string; children?: ComponentChildren }) {
  return <span class={`badge s-${status}`}>{children ?? label(status)}</span>;
}

export function When({ at }: { at: string | null | undefined }) {
  if (!at) return <span class="muted">—</span>;
  return (
    <time dateTime={at} title={new Date(at).toLocaleString()}>
      {shortTime(at)} <span class="muted">· {ago(at)}</span>
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

export function Json({ value, open = false }: { value: unknown; open?: boolean }) {
  if (value === undefined || value === null) return <span class="muted">null</span>;
  return (
    <details class="json" open={open}>
      <summary>
        {Array.isArray(value) ? `[${value.length}]` : typeof value === "object" ? "{…}" : String(value)}
      </summary>
      <pre>{json(value)}</pre>
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
