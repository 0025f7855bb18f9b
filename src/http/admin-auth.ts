import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { LonghaulError } from "../core/errors.ts";

const digest = (s: string) => createHash("sha256").update(s).digest();

/** `Authorization: Bearer $LONGHAUL_ADMIN_KEY`, compared in constant time. No key set: the admin API is off. */
export function adminAuth(adminKey: string | undefined) {
  const expected = adminKey ? digest(adminKey) : null;
  return async (req: FastifyRequest): Promise<void> => {
    if (!expected) {
      throw new LonghaulError(
        "UNAUTHORIZED",
        "The admin API is off; set LONGHAUL_ADMIN_KEY on the server to use it.",
      );
    }
    const h = req.headers.authorization;
    const key = h?.startsWith("Bearer ") ? h.slice(7).trim() : "";
    if (!key || !timingSafeEqual(digest(key), expected)) {
      throw new LonghaulError(
        "UNAUTHORIZED",
        "Send the admin key as `Authorization: Bearer <LONGHAUL_ADMIN_KEY>`.",
      );
    }
  };
}
