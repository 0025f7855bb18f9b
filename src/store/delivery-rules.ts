export * from "../core/delivery.ts";
