import { isIP } from "node:net";

/** 127.0.0.0/8, ::1, and IPv4-mapped 127.x: addresses only this machine connects from. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.toLowerCase().replace(/^\[|\]$/g, "");
  if (a === "::1" || a === "0:0:0:0:0:0:0:1") return true;
  const v4 = a.startsWith("::ffff:") ? a.slice(7) : a;
  return isIP(v4) === 4 && v4.startsWith("127.");
}

/**
 * A `Host` header naming this machine by loopback (`localhost`, `127.0.0.1`, `[::1]`, any
 * port). Any other name means the page was reached through something else (a proxy, a
 * rebinding DNS name), and whatever it shows may be read by another origin.
 */
export function isLoopbackHost(host: string | undefined): boolean {
  if (!host) return false;
  const m = /^(localhost|127\.0\.0\.1|\[::1\])(?::\d{1,5})?$/i.exec(host.trim());
  return m !== null;
}
