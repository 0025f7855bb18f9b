const TENANT_KEY = "longhaul.apiKey";
const ADMIN_KEY = "longhaul.adminKey";

/** The key `longhaul dev` writes into the page; absent under `longhaul serve`. */
export function devApiKey(): string | null {
  return document.querySelector<HTMLMetaElement>('meta[name="longhaul-dev-key"]')?.content || null;
}

function read(name: string): string | null {
  try {
    return sessionStorage.getItem(name);
  } catch {
    return null;
  }
}

function write(name: string, value: string | null): void {
  try {
    if (value === null) sessionStorage.removeItem(name);
    else sessionStorage.setItem(name, value);
  } catch {
    // Storage blocked: the key lives as long as the page.
  }
}

export interface TenantSession {
  key: string;
  /** Whether it is the development tenant's key from `longhaul dev`. */
  dev: boolean;
}

/** A key entered in this tab wins over the development key, so another tenant can be inspected. */
export function tenantSession(): TenantSession | null {
  const entered = read(TENANT_KEY);
  if (entered) return { key: entered, dev: false };
  const dev = devApiKey();
  return dev ? { key: dev, dev: true } : null;
}

export const setTenantKey = (key: string | null) => write(TENANT_KEY, key);
export const adminKey = () => read(ADMIN_KEY);
export const setAdminKey = (key: string | null) => write(ADMIN_KEY, key);
