/**
 * `GET /openapi.json`: the HTTP API (ARCHITECTURE §7) as OpenAPI 3.1, for client generators and
 * API explorers. Bodies are described where they are the contract; see the README for more.
 */
const error = { $ref: "#/components/schemas/Error" };
const json = (schema: object) => ({ content: { "application/json": { schema } } });
const errors = { "4XX": { description: "Error", ...json(error) } };
const op = (summary: string, extra: object = {}) => ({
  summary,
  responses: { "200": { description: "OK" }, ...errors },
  ...extra,
});
const noAuth = { security: [] };

export const openapi = {
  openapi: "3.1.0",
  info: {
    title: "longhaul",
    version: "1",
    description: "Long-running, webhook-driven tasks: submit, dispatch, suspend, resume on signed webhooks.",
  },
  security: [{ apiKey: [] }],
  components: {
    securitySchemes: { apiKey: { type: "http", scheme: "bearer" } },
    schemas: {
      Error: {
        type: "object",
        properties: {
          error: {
            type: "object",
            properties: { code: { type: "string" }, message: { type: "string" } },
            required: ["code", "message"],
          },
        },
      },
      Submit: {
        type: "object",
        required: ["type"],
        properties: {
          type: { type: "string" },
          input: {},
          client_request_id: { type: "string", maxLength: 255 },
          user_id: { type: "string" },
          trace_id: { type: "string" },
        },
      },
    },
  },
  paths: {
    "/v1/tasks": {
      post: op("Submit a task (idempotent by client_request_id or Idempotency-Key)", {
        requestBody: json({ $ref: "#/components/schemas/Submit" }),
        responses: {
          "202": { description: "Created" },
          "200": { description: "Already submitted" },
          ...errors,
        },
      }),
      get: op("List tasks, newest first (status, type, user_id, trace_id, limit, cursor)"),
    },
    "/v1/tasks/{id}": { get: op("A task with its steps and jobs") },
    "/v1/tasks/{id}/cancel": { post: op("Cancel a task") },
    "/v1/tasks/{id}/timeline": { get: op("Task events and webhook deliveries of the task's jobs, by time") },
    "/v1/events": { get: op("Server-Sent Events of the tenant's task log; Last-Event-ID resumes") },
    "/v1/signals": { post: op("Send a signal that ends matching waitForEvent steps") },
    "/v1/usage": { get: op("The tenant's usage: tasks by status, jobs, tokens by day") },
    "/v1/webhook-endpoints": {
      get: op("Outbound webhook endpoints"),
      post: op("Add an endpoint; its secret is shown once"),
    },
    "/v1/webhook-endpoints/{id}": { get: op("An endpoint"), delete: op("Remove an endpoint") },
    "/v1/webhook-endpoints/{id}/deliveries": { get: op("The endpoint's delivery log") },
    "/v1/webhook-endpoints/{id}/rotate-secret": {
      post: op(
        "A new signing secret, shown once; the old one also signs until expire_previous_in_s (default 86400) has passed",
      ),
    },
    "/v1/webhook-endpoints/{id}/deliveries/{delivery_id}/replay": {
      post: op("Queue a dead or failed delivery again"),
    },
    "/hooks/{source}": { post: op("Webhook ingress: verified on the raw bytes, recorded once", noAuth) },
    "/v1/callbacks/{token}": {
      post: op(
        "A capability callback URL; the body is the step's result. The same body again answers 200 with duplicate: true",
        noAuth,
      ),
    },
    "/v1/approvals/{token}": {
      get: op(
        "The approval page: the buttons its link may use, and only the input fields the step shows",
        noAuth,
      ),
      post: op(
        "Approve or reject. approval_url needs decision; a one-click approve_url or reject_url takes only its own",
        {
          ...noAuth,
          requestBody: json({
            type: "object",
            properties: {
              decision: { enum: ["approve", "reject"] },
              comment: { type: "string", maxLength: 2000 },
              approver: { type: "string", maxLength: 200 },
            },
          }),
        },
      ),
    },
    "/v1/admin/tenants": {
      get: op("Tenants (admin key)"),
      post: op("Create a tenant; its API key is shown once"),
    },
    "/v1/admin/tenants/{id}": { get: op("A tenant and its keys"), patch: op("Update name or quotas") },
    "/v1/admin/tenants/{id}/keys": { post: op("Add an API key (rotation)") },
    "/v1/admin/tenants/{id}/keys/{key_id}": { delete: op("Revoke an API key") },
    "/v1/admin/tenants/{id}/usage": { get: op("A tenant's usage") },
    "/v1/admin/events": { get: op("The inbox of deliveries (source, status)") },
    "/v1/admin/events/{id}/replay": { post: op("Apply an inbox event again") },
    "/healthz": {
      get: op("Health; 503 degraded while the database is unreachable or its disk is full", noAuth),
    },
    "/metrics": { get: op("Prometheus metrics (admin key, unless metrics.public)") },
    "/openapi.json": { get: op("This document: the HTTP API as OpenAPI 3.1", noAuth) },
  },
} as const;
