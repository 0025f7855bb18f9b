import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve, sep } from "node:path";
import { test } from "node:test";
import ts from "typescript";
import { errorInfo, LonghaulError, NonRetriableError, toErrorInfo } from "../src/core/errors.ts";
import { errorStatus, httpStatusOf } from "../src/http/error-status.ts";

// One list of error codes (ARCHITECTURE §6, `errorCodes` in src/core/errors.ts), each with its
// row in the one status table (`errorStatus` in src/http/error-status.ts): every code longhaul
// writes, as an HTTP answer or on a step, task or delivery, is a key of `errorStatus`. Codes look like `SOME_CODE`; this
// finds every such string in src and checks it against the table.

const ROOT = resolve(import.meta.dirname, "..");
const SRC = join(ROOT, "src");

/**
 * Strings shaped like codes that are other systems' names, read but never written by
 * longhaul: Node's (errno and DNS), Fastify's and SQLite's error codes, an environment
 * variable's name, the S3 client's checksum setting.
 */
const FOREIGN = new Set([
  "EAI_AGAIN",
  "ERR_PARSE_ARGS_UNKNOWN_OPTION",
  "FST_ERR_VALIDATION",
  "SQLITE_FULL",
  "MODULE_NOT_FOUND",
  "ERR_MODULE_NOT_FOUND",
  "WHEN_REQUIRED",
]);
/** Environment variables' names: `LONGHAUL_…`. */
const ENV_NAME = /^LONGHAUL_[A-Z0-9_]+$/;
const CODE_SHAPE = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$/;

function codeShapedStrings(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteralLike(node) && CODE_SHAPE.test(node.text)) found.push(node.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function files(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) files(p, out);
    else if (name.endsWith(".ts")) out.push(p);
  }
  return out;
}

test("every error code src writes is in the one list of codes and its status table", () => {
  const outside: string[] = [];
  for (const file of files(SRC)) {
    // The client imports nothing of the server; its own codes (NETWORK_ERROR, …) are the client's.
    if (relative(SRC, file).startsWith(`client${sep}`)) continue;
    for (const code of codeShapedStrings(file, readFileSync(file, "utf8"))) {
      if (!FOREIGN.has(code) && !ENV_NAME.test(code) && !Object.hasOwn(errorStatus, code))
        outside.push(`${relative(ROOT, file)}: ${code}`);
    }
  }
  assert.deepEqual(outside, []);
});

test("task code's own errors are stored under codes from the table", () => {
  assert.deepEqual(toErrorInfo(new NonRetriableError("no")), {
    code: "NON_RETRIABLE",
    message: "no",
    name: "NonRetriableError",
  });
  assert.deepEqual(toErrorInfo(new TypeError("bad")), {
    code: "TASK_CODE_ERROR",
    message: "bad",
    name: "TypeError",
  });
  assert.deepEqual(toErrorInfo("thrown text"), { code: "TASK_CODE_ERROR", message: "thrown text" });
  for (const code of ["NON_RETRIABLE", "TASK_CODE_ERROR", "JOB_CANCELED", "STEP_TIMED_OUT"] as const) {
    assert.equal(typeof httpStatusOf(new LonghaulError(code, "")), "number");
  }
  assert.deepEqual(errorInfo("HTTP_STATUS", "answered 500"), {
    code: "HTTP_STATUS",
    message: "answered 500",
  });
});
