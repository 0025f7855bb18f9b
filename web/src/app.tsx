import { useState } from "preact/hooks";
import { Admin } from "./admin.tsx";
import { Approvals } from "./approvals.tsx";
import { NewTask } from "./new-task.tsx";
import { href, useRoute } from "./router.ts";
import { setTenantKey, tenantSession } from "./session.ts";
import { SignIn } from "./sign-in.tsx";
import { Stats } from "./stats.tsx";
import { TaskDetailView } from "./task-detail.tsx";
import { TaskList } from "./task-list.tsx";

export function App() {
  const route = useRoute();
  const [session, setSession] = useState(tenantSession);

  if (!session) {
    return (
      <SignIn
        onKey={(key) => {
          setTenantKey(key);
          setSession(tenantSession());
        }}
      />
    );
  }

  const signOut = () => {
    setTenantKey(null);
    setSession(tenantSession());
  };
  const [section = "tasks", id] = route.parts;
  const view =
    section === "tasks" && id ? (
      <TaskDetailView session={session} id={id} />
    ) : section === "new" ? (
      <NewTask session={session} route={route} />
    ) : section === "stats" ? (
      <Stats session={session} />
    ) : section === "approvals" ? (
      <Approvals session={session} />
    ) : section === "admin" ? (
      <Admin session={session} route={route} />
    ) : (
      <TaskList session={session} route={route} />
    );

  return (
    <div class="shell">
      <header class="topbar">
        <a class="brand" href={href("tasks")}>
          <span class="logo" aria-hidden="true" />
          longhaul
        </a>
        <nav>
          <a href={href("tasks")} class={section === "tasks" ? "active" : ""}>
            Tasks
          </a>
          <a href={href("new")} class={section === "new" ? "active" : ""}>
            New task
          </a>
          <a href={href("stats")} class={section === "stats" ? "active" : ""}>
            Stats
          </a>
          <a href={href("approvals")} class={section === "approvals" ? "active" : ""}>
            Approvals
          </a>
          <a href={href("admin")} class={section === "admin" ? "active" : ""}>
            Admin
          </a>
        </nav>
        <div class="who">
          {session.dev ? (
            <span class="chip dev" title="Opened by longhaul dev with the development tenant's key.">
              development tenant
            </span>
          ) : (
            <span class="chip">signed in</span>
          )}
          {session.dev ? null : (
            <button type="button" class="link" onClick={signOut}>
              Sign out
            </button>
          )}
        </div>
      </header>
      <main>{view}</main>
    </div>
  );
}
