export * from "../core/work-item.ts";
