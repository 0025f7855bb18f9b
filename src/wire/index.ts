// The wire shapes of the HTTP API (ARCHITECTURE §7), one schema each: the server validates
// requests and serialises responses with them, /openapi.json is generated from them, and the
// client's types are their static types.
export * from "./approvals.ts";
export * from "./common.ts";
export * from "./events.ts";
export * from "./files.ts";
export * from "./outbound.ts";
export * from "./rerun.ts";
export * from "./search.ts";
export * from "./stats.ts";
export * from "./task-types.ts";
export * from "./tasks.ts";
export * from "./tenants.ts";
export * from "./tokens.ts";
