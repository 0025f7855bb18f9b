import type { FastifyInstance } from "fastify";
import { hashApiKey, keyHint, newApiKey } from "../core/api-keys.ts";
import { LonghaulError } from "../core/errors.ts";
import { validateQuotas } from "../core/quotas.ts";
import type { Store } from "../store/store.ts";
import { tenantJson, usageJson } from "./tenant-json.ts";

function body(req: { body: unknown }): Record<string, unknown> {
  const b = req.body;
  if (b === undefined || b === null) return {};
  if (typeof b !== "object" || Array.isArray(b))
    throw new LonghaulError("VALIDATION_FAILED", "Send a JSON object.");
  return b as Record<string, unknown>;
}

function name(v: unknown): string {
  if (typeof v !== "string" || v.trim().length === 0 || v.length > 200 || v.includes("\u0000")) {
    throw new LonghaulError("VALIDATION_FAILED", '"name" must be a string of 1 to 200 characters.');
  }
  return v.trim();
}

/** Tenants for operators: create (the key is shown once), read, update quotas, rotate and revoke keys, usage. */
export function adminTenantsRoutes(app: FastifyInstance, store: Store): void {
  app.post("/v1/admin/tenants", async (req, reply) => {
    const b = body(req);
    const key = newApiKey();
    const t = await store.createTenant({
      name: name(b.name),
      keyHash: hashApiKey(key),
      keyHint: keyHint(key),
      quotas: validateQuotas(b.quotas),
    });
    return reply.status(201).send({ ...tenantJson(t), api_key: key });
  });

  app.get("/v1/admin/tenants", async () => ({ data: (await store.listTenants()).map(tenantJson) }));

  app.get<{ Params: { id: string } }>("/v1/admin/tenants/:id", async (req) => {
    const t = await store.getTenant(req.params.id);
    if (!t) throw new LonghaulError("TENANT_NOT_FOUND", `No tenant ${req.params.id}.`);
    const keys = await store.listApiKeys(t.id);
    return {
      ...tenantJson(t),
      keys: keys.map((k) => ({
        key_id: k.id,
        hint: k.hint,
        created_at: new Date(k.createdAt).toISOString(),
        revoked_at: k.revokedAt === null ? null : new Date(k.revokedAt).toISOString(),
      })),
    };
  });

  app.patch<{ Params: { id: string } }>("/v1/admin/tenants/:id", async (req) => {
    const b = body(req);
    const patch: { name?: string; quotas?: ReturnType<typeof validateQuotas> } = {};
    if (b.name !== undefined) patch.name = name(b.name);
    if (b.quotas !== undefined) patch.quotas = validateQuotas(b.quotas);
    return tenantJson(await store.updateTenant(req.params.id, patch));
  });

  app.post<{ Params: { id: string } }>("/v1/admin/tenants/:id/keys", async (req, reply) => {
    const key = newApiKey();
    const keyId = await store.addApiKey(req.params.id, hashApiKey(key), keyHint(key));
    return reply.status(201).send({ key_id: keyId, api_key: key });
  });

  app.delete<{ Params: { id: string; keyId: string } }>(
    "/v1/admin/tenants/:id/keys/:keyId",
    async (req, reply) => {
      await store.revokeApiKey(req.params.id, req.params.keyId);
      return reply.status(204).send();
    },
  );

  app.get<{ Params: { id: string }; Querystring: { days?: string } }>(
    "/v1/admin/tenants/:id/usage",
    async (req) => {
      const u = await store.usage(req.params.id, days(req.query.days));
      if (!u) throw new LonghaulError("TENANT_NOT_FOUND", `No tenant ${req.params.id}.`);
      return usageJson(u);
    },
  );
}

export function days(v: string | undefined): number {
  const n = v === undefined ? 30 : Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 366) {
    throw new LonghaulError("VALIDATION_FAILED", '"days" must be a whole number from 1 to 366.');
  }
  return n;
}
