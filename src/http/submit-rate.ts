import type { FastifyReply, FastifyRequest } from "fastify";
import { LonghaulError } from "../core/errors.ts";

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * The per-tenant submit rate (quota `submit_rate_per_s`): a token bucket in this node's
 * memory with a burst of twice the rate. Each node limits on its own; the daily quota is
 * the one enforced across nodes, in the store. `cost` is how many tasks a request submits (a
 * batch's N): it takes that many tokens or none, so a batch larger than the burst is refused
 * whole, as it could never pass.
 */
export function submitRateLimit(
  now: () => number = Date.now,
  cost: (req: FastifyRequest) => number = () => 1,
) {
  const buckets = new Map<string, Bucket>();
  return async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const rate = req.tenant.quotas.submit_rate_per_s;
    if (rate == null) return;
    const burst = Math.max(1, rate * 2);
    const t = now();
    const b = buckets.get(req.tenant.id) ?? { tokens: burst, at: t };
    b.tokens = Math.min(burst, b.tokens + ((t - b.at) / 1000) * rate);
    b.at = t;
    if (buckets.size > 100_000) buckets.clear();
    buckets.set(req.tenant.id, b);
    const n = cost(req);
    if (n > burst) {
      throw new LonghaulError(
        "RATE_LIMITED",
        `This tenant may submit ${rate} tasks per second, at most ${Math.floor(burst)} at once; a batch of ${n} never passes: split it.`,
        { details: { max_batch: Math.floor(burst) } },
      );
    }
    if (b.tokens < n) {
      const wait = Math.ceil((n - b.tokens) / rate);
      reply.header("retry-after", String(wait));
      throw new LonghaulError(
        "RATE_LIMITED",
        `This tenant may submit ${rate} tasks per second; retry in ${wait} s.`,
        {
          details: { retry_after_s: wait },
        },
      );
    }
    b.tokens -= n;
  };
}
