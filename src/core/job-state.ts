export * from "./job.ts";
