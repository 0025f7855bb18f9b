export * from "../core/wait.ts";
export { signalOutput } from "./rows.ts";
