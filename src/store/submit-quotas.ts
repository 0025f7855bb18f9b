export * from "../core/quota.ts";
