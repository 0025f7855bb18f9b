import { useState } from "preact/hooks";
import { AdminInbox } from "./admin-inbox.tsx";
import { AdminTenants } from "./admin-tenants.tsx";
import { Outbound } from "./outbound.tsx";
import { href, type Route } from "./router.ts";
import { adminKey, setAdminKey, type TenantSession } from "./session.ts";
import { UsageView } from "./usage.tsx";

const tabs = [
  { id: "inbox", name: "Inbox", admin: true },
  { id: "outbound", name: "Outbound webhooks", admin: false },
  { id: "tenants", name: "Tenants & quotas", admin: true },
  { id: "usage", name: "Usage", admin: false },
] as const;

/**
 * Operators' views. The inbox and tenants take the admin key (LONGHAUL_ADMIN_KEY), entered
 * here and kept for this tab only; outbound webhooks and usage are the signed-in tenant's.
 */
export function Admin({ session, route }: { session: TenantSession; route: Route }) {
  const tab = tabs.find((t) => t.id === route.parts[1]) ?? tabs[0];
  const [key, setKey] = useState(adminKey);
  const signOut = () => {
    setAdminKey(null);
    setKey(null);
  };
  return (
    <section class="page">
      <header class="page-head">
        <div>
          <h1>Admin</h1>
          <p class="muted">Inbound events, outbound deliveries, tenants and usage.</p>
        </div>
        {key ? (
          <button type="button" class="link" onClick={signOut}>
            Forget the admin key
          </button>
        ) : null}
      </header>
      <nav class="tabs">
        {tabs.map((t) => (
          <a key={t.id} href={href(`admin/${t.id}`)} class={t.id === tab.id ? "active" : ""}>
            {t.name}
          </a>
        ))}
      </nav>
      {tab.admin && !key ? (
        <AdminKeyForm
          onKey={(k) => {
            setAdminKey(k);
            setKey(k);
          }}
        />
      ) : tab.id === "inbox" ? (
        <AdminInbox adminKey={key!} onUnauthorized={signOut} route={route} />
      ) : tab.id === "tenants" ? (
        <AdminTenants adminKey={key!} onUnauthorized={signOut} />
      ) : tab.id === "outbound" ? (
        <Outbound session={session} />
      ) : (
        <UsageView session={session} />
      )}
    </section>
  );
}

function AdminKeyForm({ onKey }: { onKey: (k: string) => void }) {
  const [text, setText] = useState("");
  return (
    <form
      class="card key-form"
      onSubmit={(e) => {
        e.preventDefault();
        if (text.trim()) onKey(text.trim());
      }}
    >
      <h2>Admin key</h2>
      <p class="muted small">
        The server's <code>LONGHAUL_ADMIN_KEY</code>. It is kept in this browser tab only (session storage)
        and sent only to this server.
      </p>
      <div class="row">
        <input
          type="password"
          name="admin-key"
          value={text}
          autocomplete="off"
          placeholder="admin key"
          onInput={(e) => setText((e.target as HTMLInputElement).value)}
        />
        <button type="submit">Use this key</button>
      </div>
    </form>
  );
}
