export * from "./step.ts";
