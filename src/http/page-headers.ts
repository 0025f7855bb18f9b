/**
 * The headers of every HTML page longhaul serves (the dashboard, the approval page): never
 * cached (a page may carry a key or a capability link), no referrer (the URL may be a
 * capability), no content sniffing, never framed (clickjacking a decision), and no `<base>`
 * to redirect its relative links and form posts. `policy` holds the page's own
 * Content-Security-Policy directives; `base-uri` and `frame-ancestors` are added to it.
 */
export function htmlPageHeaders(policy: string): Record<string, string> {
  return {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "content-security-policy": `${policy}; base-uri 'none'; frame-ancestors 'none'`,
  };
}

/** Text made safe inside HTML, in element content and in quoted attributes alike. */
export const escapeHtml = (s: unknown): string =>
  String(s ?? "").replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string,
  );
