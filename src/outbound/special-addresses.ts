import { BlockList } from "node:net";

/**
 * The special-purpose address blocks, written out once from the IANA registries:
 *
 * - IANA IPv4 Special-Purpose Address Registry,
 *   https://www.iana.org/assignments/iana-ipv4-special-registry/
 * - IANA IPv6 Special-Purpose Address Registry (last updated 2024-10-22),
 *   https://www.iana.org/assignments/iana-ipv6-special-registry/
 *
 * and, marked as such, multicast and deprecated site-local blocks from the IPv4 and IPv6
 * address space registries, which the special-purpose registries leave out. Update the table
 * from the registries; `globallyReachable` is the registry's own column (null: N/A).
 *
 * `refused` is what a webhook target in the block is, when the block is not globally
 * reachable: `private` for this machine and internal networks, which a development setup may
 * reach on purpose (`outbound.allow_private_networks`); `link-local` where cloud metadata
 * answers; `reserved` for blocks no webhook receiver lives at. A globally reachable block is
 * public even inside a block that is not (the registry's more specific entry wins). Blocks
 * that embed an IPv4 address (IPv4-mapped, NAT64, 6to4) are decided by that address first,
 * in ssrf.ts.
 */
export type RefusedClass = "private" | "link-local" | "reserved";

interface SpecialBlock {
  block: string;
  name: string;
  globallyReachable: boolean | null;
  refused: RefusedClass;
}

const row = (
  block: string,
  name: string,
  globallyReachable: boolean | null,
  refused: RefusedClass = "reserved",
): SpecialBlock => ({ block, name, globallyReachable, refused });

export const SPECIAL_BLOCKS: readonly SpecialBlock[] = [
  // IPv4 Special-Purpose Address Registry
  row("0.0.0.0/8", '"This network" (0.0.0.0 reaches this host)', false, "private"),
  row("10.0.0.0/8", "Private-Use", false, "private"),
  row("100.64.0.0/10", "Shared Address Space (CGNAT)", false, "private"),
  row("127.0.0.0/8", "Loopback", false, "private"),
  row("169.254.0.0/16", "Link Local", false, "link-local"),
  row("172.16.0.0/12", "Private-Use", false, "private"),
  row("192.0.0.0/24", "IETF Protocol Assignments", false),
  row("192.0.0.0/29", "IPv4 Service Continuity Prefix", false),
  row("192.0.0.8/32", "IPv4 dummy address", false),
  row("192.0.0.9/32", "Port Control Protocol Anycast", true),
  row("192.0.0.10/32", "Traversal Using Relays around NAT Anycast", true),
  row("192.0.0.170/31", "NAT64/DNS64 Discovery", false),
  row("192.0.2.0/24", "Documentation (TEST-NET-1)", false),
  row("192.31.196.0/24", "AS112-v4", true),
  row("192.52.193.0/24", "AMT", true),
  row("192.88.99.0/24", "Deprecated (6to4 Relay Anycast)", null),
  row("192.88.99.2/32", "6a44-relay anycast address", false),
  row("192.168.0.0/16", "Private-Use", false, "private"),
  row("192.175.48.0/24", "Direct Delegation AS112 Service", true),
  // Benchmarking networks are lab networks, reached on purpose like private ones.
  row("198.18.0.0/15", "Benchmarking", false, "private"),
  row("198.51.100.0/24", "Documentation (TEST-NET-2)", false),
  row("203.0.113.0/24", "Documentation (TEST-NET-3)", false),
  row("240.0.0.0/4", "Reserved", false),
  row("255.255.255.255/32", "Limited Broadcast", false),
  // IPv4 Multicast Address Space Registry
  row("224.0.0.0/4", "Multicast", false),

  // IPv6 Special-Purpose Address Registry
  row("::1/128", "Loopback Address", false, "private"),
  row("::/128", "Unspecified Address", false, "private"),
  row("::ffff:0:0/96", "IPv4-mapped Address", false, "private"),
  row("64:ff9b::/96", "IPv4-IPv6 Translat.", true),
  row("64:ff9b:1::/48", "IPv4-IPv6 Translat. (local use)", false, "private"),
  row("100::/64", "Discard-Only Address Block", false),
  row("2001::/23", "IETF Protocol Assignments", false),
  row("2001::/32", "TEREDO", null),
  row("2001:1::1/128", "Port Control Protocol Anycast", true),
  row("2001:1::2/128", "Traversal Using Relays around NAT Anycast", true),
  row("2001:1::3/128", "DNS-SD Service Registration Protocol Anycast", true),
  row("2001:2::/48", "Benchmarking", false, "private"),
  row("2001:3::/32", "AMT", true),
  row("2001:4:112::/48", "AS112-v6", true),
  row("2001:10::/28", "Deprecated (previously ORCHID)", false),
  row("2001:20::/28", "ORCHIDv2", true),
  row("2001:30::/28", "Drone Remote ID Protocol Entity Tags (DETs) Prefix", true),
  row("2001:db8::/32", "Documentation", false),
  row("2002::/16", "6to4", null),
  row("2620:4f:8000::/48", "Direct Delegation AS112 Service", true),
  row("3fff::/20", "Documentation", false),
  row("5f00::/16", "Segment Routing (SRv6) SIDs", false),
  row("fc00::/7", "Unique-Local", false, "private"),
  row("fe80::/10", "Link-Local Unicast", false, "link-local"),
  // IPv6 Address Space Registry
  row("fec0::/10", "Site-local (deprecated, RFC 3879)", false, "private"),
  row("ff00::/8", "Multicast", false),
];

type Family = "ipv4" | "ipv6";

const familyOf = (r: SpecialBlock): Family => (r.block.includes(":") ? "ipv6" : "ipv4");

/** One list per family: a BlockList matches an IPv6 rule such as ::ffff:0:0/96 against IPv4 addresses too. */
function blockLists(rows: readonly SpecialBlock[]): Record<Family, BlockList> {
  const lists = { ipv4: new BlockList(), ipv6: new BlockList() };
  for (const r of rows) {
    const [net, bits] = r.block.split("/") as [string, string];
    lists[familyOf(r)].addSubnet(net, Number(bits), familyOf(r));
  }
  return lists;
}

const reachable = blockLists(SPECIAL_BLOCKS.filter((r) => r.globallyReachable === true));
const refused = (cls: RefusedClass) =>
  blockLists(SPECIAL_BLOCKS.filter((r) => r.globallyReachable !== true && r.refused === cls));
const linkLocal = refused("link-local");
const internal = refused("private");
const reserved = refused("reserved");

/**
 * The class of an address in the table, or null when no block holds it (or only globally
 * reachable ones do). `address` is an IPv4 or IPv6 literal without a zone id. Link-local is
 * checked first (never allowed), then the globally reachable blocks that sit inside refused
 * ones, then private before reserved (benchmarking 2001:2::/48 is inside 2001::/23).
 */
export function specialClass(address: string, family: Family): RefusedClass | null {
  if (linkLocal[family].check(address, family)) return "link-local";
  if (reachable[family].check(address, family)) return null;
  if (internal[family].check(address, family)) return "private";
  if (reserved[family].check(address, family)) return "reserved";
  return null;
}
