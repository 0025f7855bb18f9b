import type { TaskStep as Step } from "../../src/client/index.ts";
import { When } from "./ui.tsx";

const REASON: Record<string, string> = { request: "request", reminder: "reminder", escalation: "escalation" };

/**
 * The messages of an approval step: where each went (`to` never holds a URL's path), for
 * whom, why, and how its delivery went, with the last error of one that has not gone out.
 */
export function Notifications({ step }: { step: Step }) {
  if (!step.notifications?.length) return null;
  return (
    <table class="notifications small">
      <caption>Notifications</caption>
      <thead>
        <tr>
          <th>Channel</th>
          <th>To</th>
          <th>Approver</th>
          <th>Why</th>
          <th>Status</th>
          <th>Attempts</th>
          <th>Last error</th>
        </tr>
      </thead>
      <tbody>
        {step.notifications.map((n) => (
          <tr key={n.id} data-status={n.status}>
            <td>{n.channel}</td>
            <td class="mono">{n.to ?? "—"}</td>
            <td>{n.approver ?? "—"}</td>
            <td>{REASON[n.reason] ?? n.reason}</td>
            <td
              class={
                n.status === "sent"
                  ? "ok"
                  : n.status === "pending" || n.status === "skipped"
                    ? "muted"
                    : "bad"
              }
            >
              {n.status}
              {n.sent_at ? (
                <>
                  {" "}
                  <When at={n.sent_at} />
                </>
              ) : null}
            </td>
            <td>{n.attempts}</td>
            <td>{n.last_error ? `${n.last_error.code}: ${n.last_error.message}` : "—"}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
