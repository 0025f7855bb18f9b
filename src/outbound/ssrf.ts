import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";
import { LonghaulError } from "../core/errors.ts";
import { specialClass } from "./special-addresses.ts";

/**
 * What an address is, for deciding whether outbound webhooks may reach it, by the IANA
 * special-purpose registries (./special-addresses.ts):
 * - `public`: the internet: outside every special-purpose block, or in a globally reachable one;
 * - `private`: this machine and internal networks (loopback, RFC 1918, CGNAT, unique-local
 *   IPv6, the unspecified address, benchmarking networks): allowed only with
 *   `allow_private_networks`;
 * - `link-local`: 169.254/16 and fe80::/10, where cloud metadata services answer: never;
 * - `reserved`: documentation, multicast, broadcast, Teredo, IPv6 outside global unicast and
 *   the other blocks no webhook lives at: never.
 * An IPv6 address that carries an IPv4 one (mapped, compatible, NAT64, 6to4) is what that
 * IPv4 address is.
 */
export type AddressClass = "public" | "private" | "link-local" | "reserved";

export interface TargetPolicy {
  allowPrivateNetworks: boolean;
}

/** A URL whose every resolved address passed the policy, and the one address to connect to. */
export interface VettedTarget {
  url: URL;
  /** The host as the request names it (Host header, TLS SNI): brackets stripped from IPv6. */
  host: string;
  address: string;
  family: 4 | 6;
}

export type Resolve = (host: string) => Promise<{ address: string; family: number }[]>;

const systemResolve: Resolve = (host) => dnsLookup(host, { all: true, verbatim: true });

export function classifyAddress(address: string): AddressClass {
  const kind = isIP(address);
  if (kind === 4) return classifyV4(address);
  if (kind === 6) return classifyV6(address);
  return "reserved";
}

/**
 * Refuses a URL whose scheme is not http(s) or whose host resolves to any address the
 * policy forbids (all addresses are checked, so a name cannot mix a public address with a
 * private one). Throws TARGET_FORBIDDEN; a name that does not resolve rejects with the
 * resolver's own error. Connect to `address` afterwards, never to the name again, so a
 * second DNS answer (rebinding) cannot move the request elsewhere.
 */
export async function vetTarget(
  target: string | URL,
  policy: TargetPolicy,
  resolve: Resolve = systemResolve,
): Promise<VettedTarget> {
  const url = typeof target === "string" ? parseUrl(target) : target;
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw forbidden(`${url.protocol.replace(/:$/, "")}: URLs are not sent to; use http or https.`);
  }
  return vetHost(url, policy, resolve);
}

/**
 * The address half of `vetTarget`, for URLs whose scheme the caller has checked (event sinks'
 * broker URLs): every address the host resolves to must pass the policy. TARGET_FORBIDDEN.
 */
export async function vetHost(
  url: URL,
  policy: TargetPolicy,
  resolve: Resolve = systemResolve,
): Promise<VettedTarget> {
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const literal = isIP(host);
  const addresses = literal
    ? [{ address: host, family: literal }]
    : (await resolve(host)).filter((a) => a.family === 4 || a.family === 6);
  const first = addresses[0];
  if (!first) throw new Error(`${host} resolves to no address`);
  for (const a of addresses) {
    const cls = classifyAddress(a.address);
    if (cls === "public" || (cls === "private" && policy.allowPrivateNetworks)) continue;
    const what = literal ? host : `${host} resolves to ${a.address}, which`;
    throw forbidden(
      cls === "private"
        ? `${what} is a private or loopback address; webhooks go to public addresses unless outbound.allow_private_networks is set.`
        : `${what} is a ${cls} address, which webhooks are never sent to.`,
    );
  }
  return { url, host, address: first.address, family: first.family === 6 ? 6 : 4 };
}

function parseUrl(text: string): URL {
  try {
    return new URL(text);
  } catch {
    throw new LonghaulError("VALIDATION_FAILED", `"${text.slice(0, 200)}" is not an absolute URL.`);
  }
}

const forbidden = (message: string) => new LonghaulError("TARGET_FORBIDDEN", message);

function v4Number(a: string): number {
  const p = a.split(".").map(Number);
  return (((p[0]! << 24) | (p[1]! << 16) | (p[2]! << 8) | p[3]!) >>> 0) as number;
}

const classifyV4 = (address: string): AddressClass => specialClass(address, "ipv4") ?? "public";

/** Eight 16-bit groups of a valid IPv6 address (zone id dropped, embedded IPv4 expanded). */
function v6Groups(address: string): number[] {
  let a = address;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (v4) {
    const n = v4Number(v4[1]!);
    a = `${a.slice(0, v4.index)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, tail] = a.split("::") as [string, string | undefined];
  const parse = (s: string | undefined) => (s ? s.split(":").map((h) => Number.parseInt(h, 16)) : []);
  const left = parse(head);
  const right = parse(tail);
  return [...left, ...Array(8 - left.length - right.length).fill(0), ...right];
}

function classifyV6(withZone: string): AddressClass {
  const address = withZone.replace(/%.*$/, "");
  const g = v6Groups(address);
  const v4At = (hi: number) => {
    const n = ((g[hi]! << 16) | g[hi + 1]!) >>> 0;
    return classifyV4(`${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`);
  };
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible) reach the IPv4 address inside;
  // :: and ::1 are the table's.
  if (zero(0, 5) && (g[5] === 0xffff || (g[5] === 0 && (g[6] !== 0 || g[7]! > 1)))) return v4At(6);
  // NAT64 (64:ff9b::/96) translates to the IPv4 address in its last 32 bits; 6to4
  // (2002::/16) tunnels to the one in bits 16 to 47.
  if (g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6)) return v4At(6);
  if (g[0] === 0x2002) return v4At(1);
  const special = specialClass(address, "ipv6");
  if (special) return special;
  // Only 2000::/3 is global unicast (IANA IPv6 Address Space); the rest is not handed out.
  return (g[0]! & 0xe000) === 0x2000 ? "public" : "reserved";
}
