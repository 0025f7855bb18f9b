import { useEffect, useState } from "preact/hooks";

export interface Route {
  /** Path segments after `#/`, e.g. `["tasks", "t_01…"]`. */
  parts: string[];
  params: URLSearchParams;
}

function current(): Route {
  const hash = location.hash.replace(/^#\/?/, "");
  const [path = "", search = ""] = hash.split("?", 2);
  return {
    parts: path.split("/").filter(Boolean).map(decodeURIComponent),
    params: new URLSearchParams(search),
  };
}

/** The page's hash route; the server serves only `/`, so every view lives after `#`. */
export function useRoute(): Route {
  const [route, setRoute] = useState(current);
  useEffect(() => {
    const on = () => setRoute(current());
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return route;
}

export function href(path: string, params: Record<string, string | undefined> = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const s = q.toString();
  return `#/${path}${s ? `?${s}` : ""}`;
}

/** Changes the route without adding a history entry (filters), or with one (navigation). */
export function go(to: string, replace = false): void {
  if (replace) history.replaceState(null, "", to);
  else location.hash = to;
  if (replace) dispatchEvent(new HashChangeEvent("hashchange"));
}
