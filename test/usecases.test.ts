import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { hashApiKey } from "../src/core/api-keys.ts";
import { LonghaulError } from "../src/core/errors.ts";
import { defineTask } from "../src/core/task-type.ts";
import { taskTypeRegistry } from "../src/engine/registry.ts";
import { buildSource } from "../src/ingress/sources.ts";
import { outboundSettings } from "../src/outbound/settings.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import type { Store } from "../src/store/store.ts";
import type { TokenClaims } from "../src/tokens/token.ts";
import {
  type ApprovalClaims,
  addApiKey,
  cancelTask,
  createTenant,
  createWebhookEndpoint,
  decisionOf,
  listTasks,
  recordWebhook,
  rotateWebhookSecret,
  sendSignal,
  submitTask,
  updateTenant,
} from "../src/usecases/index.ts";
import { tempDir } from "./helpers.ts";
import {
  acquirePgServerLock,
  dropSchemas,
  freshSchemaName,
  pgAvailableOrReport,
  pgUnreachable,
  pgUrl,
} from "./pg-env.ts";

// The use cases on a real SQLite file and on PostgreSQL: the rules they add to the store (input validation,
// idempotency, quotas, verification before recording) are checked on what the store then holds.

const rejects = (code: string) => (err: unknown) => {
  assert.ok(err instanceof LonghaulError, String(err));
  assert.equal(err.code, code, err.message);
  return true;
};

/** The suite on one store: `open` makes a fresh, migrated one; `close` closes it and removes what it made. */
function useCaseSuite(
  label: string,
  open: () => Promise<Store>,
  close: (store: Store) => Promise<void>,
): void {
  describe(`use cases on ${label}`, () => {
    let store: Store;
    const echo = defineTask("uc.echo", async (input: unknown) => input, {
      validate: (input) => {
        if (typeof (input as { n?: unknown }).n !== "number") throw new Error("n must be a number");
      },
    });
    const taskTypes = taskTypeRegistry([echo]);
    let tenantId: string;

    before(async () => {
      store = await open();
      tenantId = (await createTenant({ tenants: store }, { name: "acme" })).tenant.id;
    });
    after(() => close(store));

    test("submitTask with the same client request id returns the first task; other input under it is refused", async () => {
      const d = { tasks: store, taskTypes };
      const first = await submitTask(d, {
        tenantId,
        type: "uc.echo",
        input: { n: 1 },
        clientRequestId: "req-1",
      });
      const again = await submitTask(d, {
        tenantId,
        type: "uc.echo",
        input: { n: 1 },
        clientRequestId: "req-1",
      });
      await assert.rejects(
        submitTask(d, { tenantId, type: "uc.echo", input: { n: 2 }, clientRequestId: "req-1" }),
        rejects("IDEMPOTENCY_CONFLICT"),
      );
      assert.equal(first.created, true);
      assert.equal(again.created, false);
      assert.equal(again.task.id, first.task.id);
      assert.deepEqual(again.task.input, { n: 1 });
      const page = await listTasks({ tasks: store }, { tenantId, type: "uc.echo" });
      assert.equal(page.tasks.filter((t) => t.clientRequestId === "req-1").length, 1);
    });

    test("submitTask refuses input its type rejects with VALIDATION_FAILED and writes no task", async () => {
      const d = { tasks: store, taskTypes };
      const before = (await listTasks({ tasks: store }, { tenantId, limit: 200 })).tasks.length;
      await assert.rejects(
        submitTask(d, { tenantId, type: "uc.echo", input: { n: "one" }, clientRequestId: "bad-input" }),
        (err: unknown) =>
          rejects("VALIDATION_FAILED")(err) && /n must be a number/.test((err as Error).message),
      );
      // Absent input is {} and goes through the same check.
      await assert.rejects(submitTask(d, { tenantId, type: "uc.echo" }), rejects("VALIDATION_FAILED"));
      assert.equal((await listTasks({ tasks: store }, { tenantId, limit: 200 })).tasks.length, before);
    });

    test("submitTask refuses an unregistered type with TASK_TYPE_UNKNOWN and writes no task", async () => {
      const before = (await listTasks({ tasks: store }, { tenantId, limit: 200 })).tasks.length;
      await assert.rejects(
        submitTask({ tasks: store, taskTypes }, { tenantId, type: "uc.nope", input: {} }),
        rejects("TASK_TYPE_UNKNOWN"),
      );
      assert.equal((await listTasks({ tasks: store }, { tenantId, limit: 200 })).tasks.length, before);
    });

    test("submitTask past the tenant's tasks_per_day is QUOTA_EXCEEDED, and a retry of an accepted id still answers", async () => {
      const { tenant } = await createTenant(
        { tenants: store },
        { name: "daily", quotas: { tasks_per_day: 2 } },
      );
      const d = { tasks: store, taskTypes };
      const s = (id: string) =>
        submitTask(d, { tenantId: tenant.id, type: "uc.echo", input: { n: 1 }, clientRequestId: id });
      const a = await s("a");
      await s("b");
      await assert.rejects(s("c"), rejects("QUOTA_EXCEEDED"));
      const retried = await s("a");
      assert.equal(retried.created, false);
      assert.equal(retried.task.id, a.task.id);
      assert.equal((await listTasks({ tasks: store }, { tenantId: tenant.id })).tasks.length, 2);
    });

    test("cancelTask cancels the tenant's task and answers TASK_NOT_FOUND to another tenant", async () => {
      const { task } = await submitTask(
        { tasks: store, taskTypes },
        { tenantId, type: "uc.echo", input: { n: 3 } },
      );
      const other = (await createTenant({ tenants: store }, { name: "other" })).tenant.id;
      await assert.rejects(
        cancelTask({ tasks: store }, { tenantId: other, taskId: task.id }),
        rejects("TASK_NOT_FOUND"),
      );
      const canceled = await cancelTask({ tasks: store }, { tenantId, taskId: task.id });
      assert.equal(canceled.status, "canceled");
      assert.equal((await store.getTask(tenantId, task.id))?.task.status, "canceled");
    });

    test("listTasks refuses an unknown status and pages by its limit", async () => {
      await assert.rejects(
        listTasks({ tasks: store }, { tenantId, status: "sleeping" }),
        rejects("VALIDATION_FAILED"),
      );
      // A limit below 1 means the default page, never an empty one.
      const all = await listTasks({ tasks: store }, { tenantId, limit: 0 });
      assert.ok(all.tasks.length > 1);
      const single = await listTasks({ tasks: store }, { tenantId, limit: 1 });
      assert.equal(single.tasks.length, 1);
      assert.notEqual(single.nextCursor, null);
    });

    test("createTenant refuses bad quotas before writing, and its key and a rotated key both find the tenant", async () => {
      const count = (await store.listTenants()).length;
      await assert.rejects(
        createTenant({ tenants: store }, { name: "bad", quotas: { tasks_per_day: -1 } }),
        rejects("VALIDATION_FAILED"),
      );
      await assert.rejects(createTenant({ tenants: store }, { name: "   " }), rejects("VALIDATION_FAILED"));
      assert.equal((await store.listTenants()).length, count);
      const { tenant, apiKey } = await createTenant({ tenants: store }, { name: "  keyed  " });
      assert.equal(tenant.name, "keyed");
      assert.equal((await store.tenantByKeyHash(hashApiKey(apiKey)))?.id, tenant.id);
      const rotated = await addApiKey({ tenants: store }, { tenantId: tenant.id });
      assert.notEqual(rotated.apiKey, apiKey);
      assert.equal((await store.tenantByKeyHash(hashApiKey(rotated.apiKey)))?.id, tenant.id);
    });

    test("sendSignal with the same client id is a duplicate", async () => {
      const first = await sendSignal(
        { waits: store },
        { tenantId, name: "uc.paid", data: { id: 1 }, clientId: "sig-1" },
      );
      const again = await sendSignal(
        { waits: store },
        { tenantId, name: "uc.paid", data: { id: 1 }, clientId: "sig-1" },
      );
      assert.equal(first.duplicate, false);
      assert.equal(again.duplicate, true);
      assert.equal(again.id, first.id);
    });

    test("updateTenant checks quotas before writing and keeps what the patch leaves out", async () => {
      const { tenant } = await createTenant(
        { tenants: store },
        { name: "patched", quotas: { tasks_per_day: 5 } },
      );
      await assert.rejects(
        updateTenant(
          { tenants: store },
          { tenantId: tenant.id, name: "renamed", quotas: { tasks_per_day: "many" } },
        ),
        rejects("VALIDATION_FAILED"),
      );
      assert.equal((await store.getTenant(tenant.id))?.name, "patched");
      const renamed = await updateTenant({ tenants: store }, { tenantId: tenant.id, name: " renamed " });
      assert.equal(renamed.name, "renamed");
      assert.deepEqual(renamed.quotas, { tasks_per_day: 5 });
    });

    describe("webhook endpoints", () => {
      const open = outboundSettings({ allow_private_networks: true });
      const guarded = outboundSettings();

      test("createWebhookEndpoint refuses credentials, a non-URL and a forbidden target before writing", async () => {
        const d = (settings: typeof open) => ({ outbound: store, settings, maxPerTenant: 0 });
        const attempts: [typeof open, string, string][] = [
          [open, "http://user:pw@127.0.0.1:9/hook", "VALIDATION_FAILED"],
          [open, "not a url", "VALIDATION_FAILED"],
          [guarded, "http://127.0.0.1:9/hook", "TARGET_FORBIDDEN"],
        ];
        for (const [settings, url, code] of attempts) {
          await assert.rejects(createWebhookEndpoint(d(settings), { tenantId, url }), rejects(code));
        }
        assert.equal((await store.listWebhookEndpoints(tenantId)).length, 0);
      });

      test("createWebhookEndpoint dedupes the event filter and returns its secret once; rotation returns a new one", async () => {
        const { endpoint, secret } = await createWebhookEndpoint(
          { outbound: store, settings: open, maxPerTenant: 0 },
          {
            tenantId,
            url: "http://127.0.0.1:9/hook",
            events: ["task.succeeded", "task.succeeded", "task.failed"],
          },
        );
        assert.match(secret, /^whsec_/);
        assert.deepEqual(endpoint.events, ["task.succeeded", "task.failed"]);
        const rotated = await rotateWebhookSecret(
          { outbound: store, settings: open },
          { tenantId, endpointId: endpoint.id },
        );
        assert.notEqual(rotated.secret, secret);
        assert.ok(rotated.endpoint.previousSecretExpiresAt !== null);
        const other = (await createTenant({ tenants: store }, { name: "no-endpoints" })).tenant.id;
        await assert.rejects(
          rotateWebhookSecret(
            { outbound: store, settings: open },
            { tenantId: other, endpointId: endpoint.id },
          ),
          rejects("WEBHOOK_ENDPOINT_NOT_FOUND"),
        );
      });
    });

    describe("recordWebhook", () => {
      const secret = "uc-secret";
      const sources = new Map([
        ["gh", buildSource("gh", { provider: "sim", scheme: "github", secrets: [secret] })],
      ]);
      const clock = { now: () => 1_700_000_000_000 };
      const signed = (body: Buffer) => ({
        "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`,
      });
      const inboxCount = async () => (await store.listInbox({ limit: 200 })).events.length;

      test("records a verified JSON event once; the same bytes again are a duplicate", async () => {
        const body = Buffer.from(JSON.stringify({ id: "evt-1", type: "job.succeeded" }));
        const d = { inbox: store, clock, sources };
        const first = await recordWebhook(d, { source: "gh", headers: signed(body), body });
        const again = await recordWebhook(d, { source: "gh", headers: signed(body), body });
        assert.equal(first.duplicate, false);
        assert.equal(again.duplicate, true);
        assert.equal(again.eventId, first.eventId);
      });

      test("refuses an unknown source, a bad signature and a signed non-JSON body, recording nothing", async () => {
        const d = { inbox: store, clock, sources };
        const before = await inboxCount();
        const body = Buffer.from(JSON.stringify({ id: "evt-2" }));
        await assert.rejects(
          recordWebhook(d, { source: "nope", headers: signed(body), body }),
          rejects("SOURCE_NOT_FOUND"),
        );
        const forged = { "x-hub-signature-256": `sha256=${"0".repeat(64)}` };
        await assert.rejects(recordWebhook(d, { source: "gh", headers: forged, body }), (err: unknown) => {
          assert.ok(err instanceof LonghaulError);
          assert.equal(err.code, "SIGNATURE_INVALID");
          return true;
        });
        const text = Buffer.from("not json");
        await assert.rejects(
          recordWebhook(d, { source: "gh", headers: signed(text), body: text }),
          rejects("INVALID_JSON"),
        );
        assert.equal(await inboxCount(), before);
      });
    });
  });
}

{
  const tmp = tempDir();
  useCaseSuite(
    "a SQLite file",
    async () => {
      const store = new SqliteStore({ path: join(tmp.dir, "longhaul.db") });
      await store.migrate();
      return store;
    },
    async (store) => {
      await store.close();
      tmp.cleanup();
    },
  );
}

if (pgAvailableOrReport(await pgUnreachable(), "use case tests on PostgreSQL")) {
  // Another test file restarts the database server; never run beside it.
  let release: () => void = () => {};
  before(async () => {
    release = await acquirePgServerLock();
  });
  after(() => release());
  const schema = freshSchemaName();
  useCaseSuite(
    "PostgreSQL",
    async () => {
      const store = new PostgresStore({ url: pgUrl(schema) });
      await store.migrate();
      return store;
    },
    async (store) => {
      await store.close();
      await dropSchemas([schema]);
    },
  );
}

describe("decisionOf", () => {
  const claims = (purpose: ApprovalClaims["purpose"]): ApprovalClaims =>
    ({ purpose, tenantId: "t", taskId: "k", stepId: "s", attempt: 1 }) as TokenClaims as ApprovalClaims;

  test("a decide link needs approve or reject", () => {
    assert.equal(decisionOf(claims("decide"), "reject"), "reject");
    assert.throws(() => decisionOf(claims("decide"), undefined), rejects("VALIDATION_FAILED"));
    assert.throws(() => decisionOf(claims("decide"), "maybe"), rejects("VALIDATION_FAILED"));
  });

  test("a one-click link does only its own decision", () => {
    assert.equal(decisionOf(claims("approve"), undefined), "approve");
    assert.equal(decisionOf(claims("approve"), "approve"), "approve");
    assert.throws(() => decisionOf(claims("approve"), "reject"), rejects("FORBIDDEN"));
  });
});
