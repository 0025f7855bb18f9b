import fastifyRateLimit from "@fastify/rate-limit";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { LonghaulError } from "../core/errors.ts";
import type { Limits } from "../core/limits.ts";

type Kind = "reads" | "writes" | "unauthenticated" | "hooks" | "callbacks" | "approvals";
type Check = ReturnType<FastifyInstance["createRateLimit"]>;
type AuthHook = (req: FastifyRequest, reply: FastifyReply) => Promise<void>;

const RATE_LIMIT_WINDOW_MS = 60_000;
/** Buckets kept per limiter; the least recently used is forgotten past this. */
const RATE_LIMIT_BUCKETS = 10_000;

const what: Record<Kind, string> = {
  reads: "API reads (GET) for this tenant",
  writes: "API writes for this tenant",
  unauthenticated: "requests without a valid API key from this address",
  hooks: "webhook deliveries to this source from this address",
  callbacks: "callback requests from this address",
  approvals: "approval requests from this address",
};

/** The setting of each limit, named in its 429 so an operator knows which one to raise. */
const setting: Record<Kind, keyof Limits> = {
  reads: "api_reads_per_min",
  writes: "api_writes_per_min",
  unauthenticated: "unauthenticated_per_min",
  hooks: "hooks_per_min",
  callbacks: "callbacks_per_min",
  approvals: "approvals_per_min",
};

/**
 * 429 for `kind` past `max` a minute: the message names the limit (its setting) and when its
 * window resets; `retry_after_s` becomes `Retry-After`.
 */
export function rateLimited(kind: Kind, max: number, resetS: number): LonghaulError {
  const wait = Math.max(1, resetS);
  return new LonghaulError(
    "RATE_LIMITED",
    `Too many ${what[kind]}: the limit is ${max} a minute (limits.${setting[kind]}); the window resets in ${wait} s, retry then.`,
    { details: { retry_after_s: wait, limit: setting[kind] } },
  );
}

/**
 * The state of a limit on every answer it counts: `RateLimit-Limit`, `-Remaining`, `-Reset`
 * (seconds until the window ends) and `RateLimit-Policy` (`<max>;w=60`), as the IETF
 * RateLimit header fields draft spells them, and the same three as `X-RateLimit-*` for
 * clients that read those.
 */
export function limitHeaders(
  header: (name: string, value: string) => void,
  limit: number,
  remaining: number,
  resetS: number,
): void {
  for (const prefix of ["ratelimit", "x-ratelimit"]) {
    header(`${prefix}-limit`, String(limit));
    header(`${prefix}-remaining`, String(remaining));
    header(`${prefix}-reset`, String(resetS));
  }
  header("ratelimit-policy", `${limit};w=${RATE_LIMIT_WINDOW_MS / 1000}`);
}

/**
 * Fixed one-minute windows counted here, for `POST /hooks/:source`: one instance serves the
 * path answered ahead of the router (./hook-ingress.ts) and the router's route, so both count
 * against the same limit. At most `buckets` keys are kept, the least recently counted
 * forgotten first.
 */
export class FixedWindows {
  private readonly windows = new Map<string, { count: number; endsAt: number }>();

  constructor(
    private readonly max: number,
    private readonly windowMs: number,
    private readonly buckets: number,
  ) {}

  /** Counts one request for `key` at `now`. */
  hit(key: string, now: number): { limit: number; remaining: number; resetS: number; exceeded: boolean } {
    let w = this.windows.get(key);
    if (w) this.windows.delete(key);
    if (!w || w.endsAt <= now) w = { count: 0, endsAt: now + this.windowMs };
    w.count++;
    this.windows.set(key, w);
    if (this.windows.size > this.buckets) this.windows.delete(this.windows.keys().next().value as string);
    return {
      limit: this.max,
      remaining: Math.max(0, this.max - w.count),
      resetS: Math.ceil((w.endsAt - now) / 1000),
      exceeded: w.count > this.max,
    };
  }
}

/** The webhooks' windows for `limits.hooks_per_min`, or null when it is 0 (no limit). */
export function hookWindows(limits: Limits): FixedWindows | null {
  const max = limits.hooks_per_min;
  return max > 0 ? new FixedWindows(max, RATE_LIMIT_WINDOW_MS, RATE_LIMIT_BUCKETS) : null;
}

/**
 * Counts one webhook for `key` (its source and the client's address): sets the
 * `x-ratelimit-*` headers, and returns the 429 to answer when it is past the limit.
 */
export function countHook(
  windows: FixedWindows,
  key: string,
  header: (name: string, value: string) => void,
): LonghaulError | null {
  const w = windows.hit(key, Date.now());
  limitHeaders(header, w.limit, w.remaining, w.resetS);
  return w.exceeded ? rateLimited("hooks", w.limit, w.resetS) : null;
}

/**
 * The address `lh.fetch` gives a request whose client address it was not told (./fetch.ts):
 * the unspecified address, which no connection's peer can have. Such requests are not counted
 * against an address: one bucket for all of them would let any client lock out every other.
 */
export const UNKNOWN_ADDRESS = "0.0.0.0";

/** Failures of a credential that is not genuine: counted against the client's address. */
const NOT_GENUINE: ReadonlySet<string> = new Set([
  "UNAUTHORIZED",
  "TOKEN_MALFORMED",
  "TOKEN_KEY_UNKNOWN",
  "TOKEN_INVALID",
  "TOKEN_EXPIRED",
]);

/** The limits counted per client address, by kind. */
const PER_ADDRESS: ReadonlySet<Kind> = new Set(["unauthenticated", "hooks", "callbacks", "approvals"]);

/** The public routes limited by client address, by the route they matched. */
function publicKind(url: string | undefined): Kind | null {
  if (url === "/hooks/:source") return "hooks";
  if (url?.startsWith("/v1/callbacks/")) return "callbacks";
  if (url?.startsWith("/v1/approvals/")) return "approvals";
  // A Slack button click decides an approval as a link does, so it shares the links' limit.
  if (url === "/v1/slack/interactions") return "approvals";
  return null;
}

export interface RateLimits {
  /** Wraps an authentication hook so that its failures count against the client's address. */
  failuresLimited(auth: AuthHook): AuthHook;
  /**
   * Wraps the tenant authentication hook of the API: a request whose key or read token
   * resolves counts against its tenant, a `GET` as a read and anything else as a write; one
   * whose key is missing or unknown, or whose token is not genuine, counts against its
   * address, so made-up credentials do not each get a bucket of their own.
   */
  authenticated(auth: AuthHook): AuthHook;
}

/**
 * Request rates per tenant and per client address (`limits.*_per_min`), counted by
 * `@fastify/rate-limit` in this node's memory in fixed one-minute windows. Over the limit:
 * 429 `RATE_LIMITED` with `Retry-After` (seconds until the window ends). Each node counts on
 * its own, so N nodes behind a balancer allow up to N times the limit. The address is the
 * socket's peer: behind a proxy every client shares the proxy's address. A request handed to
 * `lh.fetch` without its client's address is counted per tenant only (`UNKNOWN_ADDRESS`).
 */
export function installRateLimits(
  app: FastifyInstance,
  limits: Limits,
  knownSource: (name: string) => boolean,
  hooks: FixedWindows | null,
): RateLimits {
  app.register(fastifyRateLimit, { global: false });

  // Webhooks are counted by `hooks` (FixedWindows), shared with the path ahead of the router.
  const max: Record<Exclude<Kind, "hooks">, number> = {
    reads: limits.api_reads_per_min,
    writes: limits.api_writes_per_min,
    unauthenticated: limits.unauthenticated_per_min,
    callbacks: limits.callbacks_per_min,
    approvals: limits.approvals_per_min,
  };
  const keyOf: Record<Kind, (req: FastifyRequest) => string> = {
    reads: (req) => req.tenant.id,
    writes: (req) => req.tenant.id,
    unauthenticated: (req) => req.ip,
    hooks: (req) => {
      const source = (req.params as { source?: string }).source ?? "";
      // Made-up source names share one bucket per address rather than minting new ones.
      return `${knownSource(source) ? source : ""}\u0000${req.ip}`;
    },
    callbacks: (req) => req.ip,
    approvals: (req) => req.ip,
  };
  const checks = new Map<Exclude<Kind, "hooks">, Check>();

  const check = async (kind: Kind, req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (req.ip === UNKNOWN_ADDRESS && PER_ADDRESS.has(kind)) return;
    if (kind === "hooks") {
      const limited = hooks && countHook(hooks, keyOf.hooks(req), (name, value) => reply.header(name, value));
      if (limited) throw limited;
      return;
    }
    const limit = max[kind];
    if (limit === 0) return;
    let c = checks.get(kind);
    if (!c) {
      // Created on first use: the plugin's decorator exists once the plugin has loaded.
      c = app.createRateLimit({
        max: limit,
        timeWindow: RATE_LIMIT_WINDOW_MS,
        keyGenerator: keyOf[kind],
        cache: RATE_LIMIT_BUCKETS,
      } as Parameters<FastifyInstance["createRateLimit"]>[0]);
      checks.set(kind, c);
    }
    const r = await c(req);
    if (r.isAllowed) return;
    limitHeaders((name, value) => reply.header(name, value), r.max, r.remaining, r.ttlInSeconds);
    if (!r.isExceeded) return;
    throw rateLimited(kind, r.max, r.ttlInSeconds);
  };

  app.addHook("onRequest", async (req, reply) => {
    const kind = publicKind(req.routeOptions.url);
    if (kind) await check(kind, req, reply);
  });

  const failuresLimited =
    (auth: AuthHook): AuthHook =>
    async (req, reply) => {
      try {
        await auth(req, reply);
      } catch (err) {
        if (err instanceof LonghaulError && NOT_GENUINE.has(err.code)) {
          await check("unauthenticated", req, reply);
        }
        throw err;
      }
    };
  return {
    failuresLimited,
    authenticated: (auth) => {
      const guarded = failuresLimited(auth);
      return async (req, reply) => {
        await guarded(req, reply);
        await check(req.method === "GET" || req.method === "HEAD" ? "reads" : "writes", req, reply);
      };
    },
  };
}
