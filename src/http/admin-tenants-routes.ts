import { Type } from "typebox";
import { LonghaulError } from "../core/errors.ts";
import type { TenantStore } from "../store/store.ts";
import { addApiKey, createTenant } from "../usecases/create-tenant.ts";
import { updateTenant } from "../usecases/update-tenant.ts";
import { IdParams, NoContent } from "../wire/common.ts";
import {
  KeyParams,
  NewApiKey,
  Tenant,
  TenantBody,
  TenantPatch,
  TenantWithKey,
  TenantWithKeys,
  Usage,
  UsageQuery,
} from "../wire/tenants.ts";
import type { Api } from "./api.ts";
import { operation } from "./openapi.ts";
import { tenantJson, usageJson } from "./tenant-json.ts";

/** Tenants for operators: create (the key is shown once), read, update quotas, rotate and revoke keys, usage. */
export function adminTenantsRoutes(app: Api, store: TenantStore): void {
  const create = operation("Create a tenant; its API key is shown once", {
    body: TenantBody,
    response: { 201: TenantWithKey },
  });
  app.post("/v1/admin/tenants", { schema: create }, async (req, reply) => {
    const { tenant, apiKey } = await createTenant(
      { tenants: store },
      { name: req.body.name, quotas: req.body.quotas },
    );
    return reply.status(201).send({ ...tenantJson(tenant), api_key: apiKey });
  });

  const list = operation("Tenants (admin key)", {
    response: { 200: Type.Object({ data: Type.Array(Tenant) }) },
  });
  app.get("/v1/admin/tenants", { schema: list }, async () => ({
    data: (await store.listTenants()).map(tenantJson),
  }));

  const one = operation("A tenant and its keys", { params: IdParams, response: { 200: TenantWithKeys } });
  app.get("/v1/admin/tenants/:id", { schema: one }, async (req) => {
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

  const update = operation("Update name or quotas", {
    params: IdParams,
    body: TenantPatch,
    response: { 200: Tenant },
  });
  app.patch("/v1/admin/tenants/:id", { schema: update }, async (req) => {
    const b = req.body;
    return tenantJson(
      await updateTenant({ tenants: store }, { tenantId: req.params.id, name: b.name, quotas: b.quotas }),
    );
  });

  const addKey = operation("Add an API key (rotation)", { params: IdParams, response: { 201: NewApiKey } });
  app.post("/v1/admin/tenants/:id/keys", { schema: addKey }, async (req, reply) => {
    const { keyId, apiKey } = await addApiKey({ tenants: store }, { tenantId: req.params.id });
    return reply.status(201).send({ key_id: keyId, api_key: apiKey });
  });

  const revoke = operation("Revoke an API key", { params: KeyParams, response: { 204: NoContent } });
  app.delete("/v1/admin/tenants/:id/keys/:keyId", { schema: revoke }, async (req, reply) => {
    await store.revokeApiKey(req.params.id, req.params.keyId);
    return reply.status(204).send(null);
  });

  const usage = operation("A tenant's usage", {
    params: IdParams,
    querystring: UsageQuery,
    response: { 200: Usage },
  });
  app.get("/v1/admin/tenants/:id/usage", { schema: usage }, async (req) => {
    const u = await store.usage(req.params.id, req.query.days ?? 30);
    if (!u) throw new LonghaulError("TENANT_NOT_FOUND", `No tenant ${req.params.id}.`);
    return usageJson(u);
  });
}
