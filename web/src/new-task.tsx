import { useEffect, useState } from "preact/hooks";
import type { SubmitResult, TaskTypeInfo, TaskTypeList } from "../../src/client/index.ts";
import { ApiError, request } from "./api.ts";
import { json } from "./format.ts";
import { go, href, type Route } from "./router.ts";
import { exampleFrom } from "./schema-example.ts";
import type { TenantSession } from "./session.ts";
import { Empty, Json, RequestError } from "./ui.tsx";

/** The input to start from: the schema's example or defaults, else `{}`. */
const startInput = (t: TaskTypeInfo | undefined) => json(exampleFrom(t?.input_schema) ?? {});

/**
 * Starts a task of a registered type: pick the type, edit its input as JSON (prefilled from
 * its schema), submit, and land on the new task's page. The server checks the input against
 * the type's schema; its refusal is shown as it answers it.
 */
export function NewTask({ session, route }: { session: TenantSession; route: Route }) {
  const [types, setTypes] = useState<TaskTypeInfo[] | null>(null);
  const [loadError, setLoadError] = useState<ApiError | null>(null);
  const [type, setType] = useState(route.params.get("type") ?? "");
  const [input, setInput] = useState("{}");
  const [userId, setUserId] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<{ code: string; message: string } | null>(null);

  useEffect(() => {
    request<TaskTypeList>("/v1/task-types", { key: session.key }).then(
      (r) => {
        setTypes(r.data);
        const chosen = r.data.find((t) => t.name === type) ?? r.data[0];
        if (chosen) {
          setType(chosen.name);
          setInput(startInput(chosen));
        }
      },
      (err) => setLoadError(err as ApiError),
    );
  }, [session.key]);

  const info = types?.find((t) => t.name === type);
  const pick = (name: string) => {
    setType(name);
    setInput(startInput(types?.find((t) => t.name === name)));
    setError(null);
  };

  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    let parsed: unknown;
    try {
      parsed = JSON.parse(input);
    } catch (err) {
      setError({ code: "INVALID_JSON", message: `The input is not JSON: ${(err as Error).message}` });
      return;
    }
    setBusy(true);
    try {
      const body: Record<string, unknown> = { type, input: parsed };
      if (userId.trim()) body.user_id = userId.trim();
      const r = await request<SubmitResult>("/v1/tasks", { key: session.key, body });
      go(href(`tasks/${r.task_id}`));
    } catch (err) {
      setError(
        err instanceof ApiError
          ? { code: err.code, message: err.message }
          : { code: "ERROR", message: String(err) },
      );
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="page">
      <header class="page-head">
        <div>
          <h1>New task</h1>
          <p class="muted">
            Start a task of a registered type. Its input is checked against the type's schema when it is
            submitted.
          </p>
        </div>
      </header>
      {loadError ? <RequestError error={loadError} what="The list of task types" /> : null}
      {types === null ? (
        loadError ? null : (
          <Empty>Loading…</Empty>
        )
      ) : types.length === 0 ? (
        <Empty>This server registers no task types.</Empty>
      ) : (
        <form class="card new-task" onSubmit={submit} aria-label="New task">
          <div class="new-task-fields">
            <label>
              Type
              <select name="type" value={type} onChange={(e) => pick((e.target as HTMLSelectElement).value)}>
                {types.map((t) => (
                  <option key={t.name} value={t.name}>
                    {t.name}
                  </option>
                ))}
              </select>
            </label>
            <label>
              User id
              <input
                name="user_id"
                value={userId}
                placeholder="optional"
                autocomplete="off"
                onInput={(e) => setUserId((e.target as HTMLInputElement).value)}
              />
            </label>
          </div>
          <label class="block">
            Input (JSON)
            <textarea
              name="input"
              rows={Math.min(24, Math.max(6, input.split("\n").length + 1))}
              spellcheck={false}
              value={input}
              onInput={(e) => setInput((e.target as HTMLTextAreaElement).value)}
            />
          </label>
          {info?.input_schema ? (
            <details class="small">
              <summary>The input's JSON Schema</summary>
              <Json value={info.input_schema} open />
            </details>
          ) : (
            <p class="muted small">This type publishes no JSON Schema; it checks its input when submitted.</p>
          )}
          {error ? (
            <div class="notice notice-error" role="alert" data-error={error.code}>
              <strong>Not submitted.</strong> {error.message} <code>{error.code}</code>
            </div>
          ) : null}
          <div class="buttons">
            <button type="submit" class="primary" disabled={busy || !type}>
              {busy ? "Submitting…" : "Submit task"}
            </button>
          </div>
        </form>
      )}
    </section>
  );
}
