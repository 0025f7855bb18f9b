import { isObject } from "../json-client.ts";
import { itemUsage, type ResultItem } from "./result-merge.ts";

/**
 * One line of an OpenAI batch's output or error file as an item:
 * `{id, custom_id, response: {status_code, request_id, body}, error}`. A 2xx response is
 * `succeeded`, its body the item's output; another status code, or an `error` without a
 * response, is `failed` (the `batch_expired` error is `expired`). The usage is the body's.
 */
export function readOpenAIResultLine(value: unknown): ResultItem | string {
  if (!isObject(value)) return "not a JSON object";
  const { custom_id, response, error } = value;
  if (typeof custom_id !== "string" || custom_id === "") return "no custom_id";
  if (isObject(response) && typeof response.status_code === "number") {
    const body = response.body;
    const usage = itemUsage(isObject(body) ? body.usage : undefined);
    const withUsage = usage ? { usage } : {};
    if (response.status_code >= 200 && response.status_code < 300) {
      return { custom_id, status: "succeeded", output: body ?? null, ...withUsage };
    }
    const failure = isObject(body) ? body.error : undefined;
    return {
      custom_id,
      status: "failed",
      error: errorOf(failure, `http_${response.status_code}`, `HTTP ${response.status_code}`),
      ...withUsage,
    };
  }
  if (isObject(error)) {
    const e = errorOf(error, "batch_request_failed", "the request failed");
    return { custom_id, status: e.code === "batch_expired" ? "expired" : "failed", error: e };
  }
  return "neither a response with a status_code nor an error";
}

function errorOf(value: unknown, code: string, message: string): { code: string; message: string } {
  if (!isObject(value)) return { code, message };
  return {
    code: typeof value.code === "string" && value.code !== "" ? value.code : code,
    message: typeof value.message === "string" && value.message !== "" ? value.message : message,
  };
}
