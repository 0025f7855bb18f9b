export * from "./quota.ts";
