import { useState } from "preact/hooks";
import { ApiError, request } from "./api.ts";

/** Asks for a tenant's API key and checks it against the API before keeping it. */
export function SignIn({ onKey, reason }: { onKey: (key: string) => void; reason?: string | undefined }) {
  const [text, setText] = useState("");
  const [error, setError] = useState<string | null>(reason ?? null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const key = text.trim();
    if (!key) return;
    setBusy(true);
    try {
      await request("/v1/tasks?limit=1", { key });
      onKey(key);
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="sign-in">
      <form class="card" onSubmit={submit}>
        <h1>Sign in to longhaul</h1>
        <p class="muted">
          Enter a tenant's API key (<code>lh_…</code>). It is kept in this browser tab only, and sent only to
          this server.
        </p>
        <input
          type="password"
          name="api-key"
          value={text}
          autocomplete="off"
          placeholder="lh_…"
          onInput={(e) => setText((e.target as HTMLInputElement).value)}
        />
        {error ? <p class="bad small">{error}</p> : null}
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        <p class="muted small">
          No key? An operator creates one with <code>longhaul tenants create NAME</code>; under{" "}
          <code>longhaul dev</code> the dashboard opens signed in.
        </p>
      </form>
    </div>
  );
}
