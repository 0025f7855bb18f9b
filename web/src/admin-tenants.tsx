import { useEffect, useState } from "preact/hooks";
import type { Tenant } from "../../src/client/index.ts";
import { ApiError, request } from "./api.ts";
import { label } from "./format.ts";
import { Empty, RequestError, When } from "./ui.tsx";

/** Every tenant with its quotas and tokens used. */
export function AdminTenants({ adminKey, onUnauthorized }: { adminKey: string; onUnauthorized: () => void }) {
  const [rows, setRows] = useState<Tenant[] | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  useEffect(() => {
    request<{ data: Tenant[] }>("/v1/admin/tenants", { key: adminKey }).then(
      (r) => setRows(r.data),
      (err) => {
        if (err instanceof ApiError && err.status === 401) onUnauthorized();
        setError(err as ApiError);
      },
    );
  }, [adminKey]);

  if (error) return <RequestError error={error} what="Tenants" />;
  if (!rows) return <Empty>Loading…</Empty>;
  return (
    <table>
      <thead>
        <tr>
          <th>Tenant</th>
          <th>Name</th>
          <th>Quotas</th>
          <th>Tokens used</th>
          <th>Created</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((t) => (
          <tr key={t.tenant_id}>
            <td class="mono">{t.tenant_id}</td>
            <td>{t.name}</td>
            <td>
              <Quotas quotas={t.quotas} tokensUsed={t.budget?.tokens_used ?? t.tokens_used} />
            </td>
            <td>{t.tokens_used?.toLocaleString() ?? "—"}</td>
            <td>
              <When at={t.created_at} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Quotas as `name: value` chips; the token budget also as a bar of what is spent. */
export function Quotas({
  quotas,
  tokensUsed,
}: {
  quotas: Record<string, unknown> | undefined;
  tokensUsed?: number | undefined;
}) {
  const entries = Object.entries(quotas ?? {}).filter(([, v]) => v !== null && v !== undefined);
  if (entries.length === 0) return <span class="muted">unlimited</span>;
  const budget = typeof quotas?.token_budget === "number" ? quotas.token_budget : null;
  return (
    <div class="quotas">
      {entries.map(([k, v]) => (
        <span class="chip" key={k}>
          {label(k)}: <b>{typeof v === "number" ? v.toLocaleString() : String(v)}</b>
        </span>
      ))}
      {budget !== null && tokensUsed !== undefined ? (
        <div class="meter" title={`${tokensUsed.toLocaleString()} of ${budget.toLocaleString()} tokens`}>
          <span style={{ width: `${Math.min(100, budget ? (tokensUsed / budget) * 100 : 100)}%` }} />
        </div>
      ) : null}
    </div>
  );
}
