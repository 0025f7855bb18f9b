/**
 * Each operation's `operationId` and tag in `/openapi.json`, for code generators (a client's
 * method names come from the ids; its modules from the tags). Keyed by method and path as the
 * document spells them. test/openapi.test.ts fails for a route missing here, so a new route
 * arrives with its name. Ids are promised like error codes: add, never rename.
 */
export const operations: Readonly<Record<string, { id: string; tag: string }>> = {
  "GET /livez": { id: "getLiveness", tag: "Health" },
  "GET /readyz": { id: "getReadiness", tag: "Health" },
  "GET /healthz": { id: "getHealth", tag: "Health" },
  "GET /openapi.json": { id: "getOpenApiDocument", tag: "Meta" },
  "GET /docs": { id: "getApiReference", tag: "Meta" },
  "GET /metrics": { id: "getMetrics", tag: "Meta" },
  "POST /hooks/{source}": { id: "receiveWebhook", tag: "Ingress" },
  "POST /v1/callbacks/{token}": { id: "postCallback", tag: "Callbacks" },
  "GET /v1/approvals/{token}": { id: "getApprovalPage", tag: "Approvals" },
  "POST /v1/approvals/{token}": { id: "decideApproval", tag: "Approvals" },
  "GET /v1/admin/events": { id: "adminListInboxEvents", tag: "Admin" },
  "POST /v1/admin/events/{id}/replay": { id: "adminReplayInboxEvent", tag: "Admin" },
  "GET /v1/admin/webhook-refusals": { id: "adminListWebhookRefusals", tag: "Admin" },
  "POST /v1/admin/tenants": { id: "adminCreateTenant", tag: "Admin" },
  "GET /v1/admin/tenants": { id: "adminListTenants", tag: "Admin" },
  "GET /v1/admin/tenants/{id}": { id: "adminGetTenant", tag: "Admin" },
  "PATCH /v1/admin/tenants/{id}": { id: "adminUpdateTenant", tag: "Admin" },
  "POST /v1/admin/tenants/{id}/keys": { id: "adminCreateTenantKey", tag: "Admin" },
  "DELETE /v1/admin/tenants/{id}/keys/{keyId}": { id: "adminRevokeTenantKey", tag: "Admin" },
  "GET /v1/admin/tenants/{id}/usage": { id: "adminGetTenantUsage", tag: "Admin" },
  "POST /v1/tasks": { id: "submitTask", tag: "Tasks" },
  "GET /v1/tasks": { id: "listTasks", tag: "Tasks" },
  "GET /v1/tasks/{id}": { id: "getTask", tag: "Tasks" },
  "GET /v1/tasks/{id}/artifacts/{name}": { id: "getTaskArtifact", tag: "Tasks" },
  "POST /v1/tasks/{id}/cancel": { id: "cancelTask", tag: "Tasks" },
  "GET /v1/tasks/{id}/timeline": { id: "getTaskTimeline", tag: "Tasks" },
  "GET /v1/task-types": { id: "listTaskTypes", tag: "Tasks" },
  "GET /v1/stats/tasks": { id: "getTaskStats", tag: "Usage" },
  "POST /v1/signals": { id: "sendSignal", tag: "Signals" },
  "GET /v1/usage": { id: "getUsage", tag: "Usage" },
  "GET /v1/events": { id: "streamEvents", tag: "Events" },
  "GET /v1/events/ws": { id: "streamEventsWebSocket", tag: "Events" },
  "POST /v1/tokens": { id: "createReadToken", tag: "Tokens" },
  "POST /v1/files": { id: "uploadFile", tag: "Files" },
  "GET /v1/files": { id: "listFiles", tag: "Files" },
  "GET /v1/files/{id}": { id: "getFile", tag: "Files" },
  "GET /v1/files/{id}/content": { id: "getFileContent", tag: "Files" },
  "DELETE /v1/files/{id}": { id: "deleteFile", tag: "Files" },
  "POST /v1/webhook-endpoints": { id: "createWebhookEndpoint", tag: "Webhook endpoints" },
  "GET /v1/webhook-endpoints": { id: "listWebhookEndpoints", tag: "Webhook endpoints" },
  "POST /v1/webhook-endpoints/{id}/rotate-secret": {
    id: "rotateWebhookEndpointSecret",
    tag: "Webhook endpoints",
  },
  "GET /v1/webhook-endpoints/{id}": { id: "getWebhookEndpoint", tag: "Webhook endpoints" },
  "DELETE /v1/webhook-endpoints/{id}": { id: "deleteWebhookEndpoint", tag: "Webhook endpoints" },
  "GET /v1/webhook-endpoints/{id}/deliveries": {
    id: "listWebhookDeliveries",
    tag: "Webhook endpoints",
  },
  "POST /v1/webhook-endpoints/{id}/deliveries/{delivery_id}/replay": {
    id: "replayWebhookDelivery",
    tag: "Webhook endpoints",
  },
};

/** The tags in the order a reference lists them, each with a line on what it groups. */
export const operationTags = [
  { name: "Tasks", description: "Submit, read, list and cancel tasks." },
  { name: "Events", description: "The tenant's task log, live: Server-Sent Events or a WebSocket." },
  { name: "Tokens", description: "Short-lived read-only tokens for a browser following its task." },
  { name: "Files", description: "Uploaded files: streamed in, read back whole or by range." },
  { name: "Signals", description: "Events that end waitForEvent steps." },
  { name: "Usage", description: "Tasks, jobs and tokens counted per tenant." },
  { name: "Webhook endpoints", description: "Outbound webhooks: endpoints, secrets and deliveries." },
  { name: "Approvals", description: "Approval pages and decisions, by signed link." },
  { name: "Callbacks", description: "Signed, expiring callback URLs that end a step." },
  { name: "Ingress", description: "Provider webhooks, verified and recorded once." },
  { name: "Admin", description: "Tenants, keys and the inbox (admin key)." },
  { name: "Health", description: "Probes: liveness and readiness." },
  { name: "Meta", description: "This document, its rendered reference and metrics." },
] as const;
