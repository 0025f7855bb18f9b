export * from "../core/job.ts";
