import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";
import { LonghaulError } from "../core/errors.ts";

/**
 * What an address is, for deciding whether outbound webhooks may reach it:
 * - `public`: the internet;
 * - `private`: this machine and internal networks (loopback, RFC 1918, CGNAT, unique-local
 *   IPv6, the unspecified address): allowed only with `allow_private_networks`;
 * - `link-local`: 169.254/16 and fe80::/10, where cloud metadata services answer: never;
 * - `reserved`: multicast, broadcast and other ranges no webhook lives at: never.
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

type Resolve = (host: string) => Promise<{ address: string; family: number }[]>;

const systemResolve: Resolve = (host) => dnsLookup(host, { all: true, verbatim: true });

export function classifyAddress(address: string): AddressClass {
  const kind = isIP(address);
  if (kind === 4) return classifyV4(v4Number(address));
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

const inV4 = (n: number, base: string, bits: number) =>
  bits === 0 || n >>> (32 - bits) === v4Number(base) >>> (32 - bits);

function classifyV4(n: number): AddressClass {
  if (inV4(n, "169.254.0.0", 16)) return "link-local";
  if (inV4(n, "224.0.0.0", 4) || inV4(n, "240.0.0.0", 4) || inV4(n, "192.0.0.0", 24)) return "reserved";
  if (
    inV4(n, "0.0.0.0", 8) ||
    inV4(n, "10.0.0.0", 8) ||
    inV4(n, "100.64.0.0", 10) ||
    inV4(n, "127.0.0.0", 8) ||
    inV4(n, "172.16.0.0", 12) ||
    inV4(n, "192.168.0.0", 16) ||
    inV4(n, "198.18.0.0", 15)
  ) {
    return "private";
  }
  return "public";
}

/** Eight 16-bit groups of a valid IPv6 address (zone id dropped, embedded IPv4 expanded). */
function v6Groups(address: string): number[] {
  let a = address.replace(/%.*$/, "");
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

function classifyV6(address: string): AddressClass {
  const g = v6Groups(address);
  const embeddedV4 = (hi: number, lo: number) => classifyV4(((hi << 16) | lo) >>> 0);
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible) reach the IPv4 address inside.
  if (zero(0, 5) && (g[5] === 0xffff || g[5] === 0)) {
    if (g[5] === 0 && g[6] === 0 && (g[7] === 0 || g[7] === 1)) return "private"; // :: and ::1
    return embeddedV4(g[6]!, g[7]!);
  }
  // NAT64 (64:ff9b::/96) translates to the IPv4 address in its last 32 bits; 6to4 (2002::/16) embeds one too.
  if (g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6)) return embeddedV4(g[6]!, g[7]!);
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return "private";
  if (g[0] === 0x2002) return embeddedV4(g[1]!, g[2]!);
  const first = g[0]!;
  if ((first & 0xffc0) === 0xfe80) return "link-local";
  if ((first & 0xff00) === 0xff00) return "reserved";
  if ((first & 0xfe00) === 0xfc00 || (first & 0xffc0) === 0xfec0) return "private";
  if (first === 0x100 && zero(1, 4)) return "reserved";
  return "public";
}
