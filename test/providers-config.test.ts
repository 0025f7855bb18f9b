import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { LonghaulError } from "../src/core/errors.ts";
import { providersFromConfig } from "../src/providers/from-config.ts";
import type { CreateJobRequest } from "../src/providers/provider.ts";
import { type GeminiStandin, startGeminiStandin } from "./fixtures/gemini-standin.ts";
import { type HttpStandin, startHttpStandin } from "./fixtures/http-standin.ts";
import { headerOf } from "./fixtures/json-standin.ts";
import { type OpenAIStandin, startOpenAIStandin } from "./fixtures/openai-standin.ts";

let openai: OpenAIStandin;
let gemini: GeminiStandin;
let ocr: HttpStandin;

before(async () => {
  [openai, gemini, ocr] = await Promise.all([
    startOpenAIStandin("sk-from-env"),
    startGeminiStandin("gemini-inline-key"),
    startHttpStandin("ocr-key"),
  ]);
});
after(() => Promise.all([openai.close(), gemini.close(), ocr.close()]));

const req = (input: unknown): CreateJobRequest => ({
  input,
  idempotencyKey: "t_1:step",
  webhookUrl: "https://hooks.example.com/hooks/x",
  tenantId: "ten_1",
  taskId: "t_1",
  stepId: "step",
});

function configError(fn: () => unknown, pattern: RegExp) {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof LonghaulError, `expected a LonghaulError, got ${String(e)}`);
    assert.equal(e.code, "CONFIG_INVALID");
    assert.match(e.message, pattern);
    return true;
  });
}

test("each entry becomes a provider named after it, its kind defaulting to the name", () => {
  const providers = providersFromConfig(
    {
      sim: { base_url: "http://127.0.0.1:8788" },
      openai: { api_key: "sk-x" },
      gemini: { api_key: "g-x" },
      ocr: { kind: "http", base_url: "http://127.0.0.1:9000" },
      "openai-eu": { kind: "openai", api_key: "sk-y", base_url: "https://eu.api.openai.com/v1" },
    },
    {},
  );
  assert.deepEqual(
    providers.map((p) => p.name),
    ["sim", "openai", "gemini", "ocr", "openai-eu"],
  );
});

test("the built providers talk to the configured base URL with the configured key", async () => {
  const [o, g, h] = providersFromConfig(
    {
      openai: { base_url: openai.baseUrl, api_key_env: "LONGHAUL_TEST_OPENAI_KEY", timeout_ms: 2000 },
      gemini: { base_url: gemini.baseUrl, api_key: "gemini-inline-key" },
      ocr: {
        kind: "http",
        base_url: ocr.url,
        api_key: "ocr-key",
        status_path: "/jobs/{id}",
        cancel_path: "/jobs/{id}/cancel",
      },
    },
    { LONGHAUL_TEST_OPENAI_KEY: "sk-from-env" },
  );
  assert.match((await o!.create(req({ model: "gpt-5", input: "hi" }))).jobId, /^resp_/);
  assert.equal(headerOf(openai.requests.at(-1)!, "authorization"), "Bearer sk-from-env");
  assert.match(
    (await g!.create(req({ model: "gemini-3-pro-preview", input: "hi" }))).jobId,
    /^interactions\//,
  );
  const created = await h!.create(req({ document: "scan.pdf" }));
  assert.equal(headerOf(ocr.requests.at(-1)!, "authorization"), "Bearer ocr-key");
  assert.equal((await h!.status!(created.jobId)).status, "created");
  assert.equal(typeof h!.cancel, "function");
});

test("an unknown kind is refused with the known ones", () => {
  configError(
    () => providersFromConfig({ cohere: { api_key: "x" } }, {}),
    /"cohere".*kind "cohere".*sim, openai, gemini, http/,
  );
  configError(() => providersFromConfig({ mine: { kind: "ftp", base_url: "ftp://x" } }, {}), /kind "ftp"/);
});

test("sim and http need base_url", () => {
  configError(() => providersFromConfig({ sim: {} }, {}), /"sim".*needs "base_url"/);
  configError(() => providersFromConfig({ ocr: { kind: "http" } }, {}), /"ocr".*needs "base_url"/);
});

test("openai and gemini need an API key, inline or from the environment", () => {
  configError(() => providersFromConfig({ openai: {} }, {}), /"openai".*needs an API key/);
  configError(
    () => providersFromConfig({ gemini: { api_key_env: "GEMINI_API_KEY" } }, {}),
    /api_key_env GEMINI_API_KEY, which is not set/,
  );
  configError(
    () => providersFromConfig({ gemini: { api_key_env: "GEMINI_API_KEY" } }, { GEMINI_API_KEY: "" }),
    /not set/,
  );
  assert.equal(
    providersFromConfig({ gemini: { api_key_env: "GEMINI_API_KEY" } }, { GEMINI_API_KEY: "k" })[0]?.name,
    "gemini",
  );
});

test("malformed fields are refused by name", () => {
  configError(
    () => providersFromConfig({ openai: { api_key: 42 } } as never, {}),
    /api_key to be a non-empty string/,
  );
  configError(() => providersFromConfig({ sim: { base_url: "http://x", timeout_ms: -1 } }, {}), /timeout_ms/);
  configError(
    () => providersFromConfig({ ocr: { kind: "http", base_url: "http://x", headers: { a: 1 } } }, {}),
    /headers/,
  );
  configError(() => providersFromConfig({ sim: "http://x" } as never, {}), /must be an object/);
});

test("an unknown key in an entry is refused by name, with the keys its kind takes", () => {
  configError(
    () => providersFromConfig({ sim: { base_url: "http://x", baseurl: "http://y" } }, {}),
    /unknown key "baseurl"; a sim entry takes kind, base_url, api_key, api_key_env, timeout_ms/,
  );
  // `headers` belongs to http entries only: given to openai it would be ignored.
  configError(
    () => providersFromConfig({ openai: { api_key: "k", headers: { a: "b" } } }, {}),
    /unknown key "headers"/,
  );
  assert.equal(
    providersFromConfig({ ocr: { kind: "http", base_url: "http://x", create_path: "/jobs" } }, {})[0]?.name,
    "ocr",
  );
});
