import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { createLonghaul, type LonghaulOptions } from "../src/app.ts";
import { checkConfig, envVariables, readConfig } from "../src/cli/config.ts";
import { devPublicUrl } from "../src/cli/dev.ts";
import type { LonghaulConfig } from "../src/config/define-config.ts";
import { LonghaulError } from "../src/core/errors.ts";
import { isPublicUrl } from "../src/core/settings.ts";
import { quietLog, tempDir, waitFor } from "./helpers.ts";
import { CLI_FROM_SOURCE, TEST_SECRET_KEY } from "./processes.ts";

// Every setting has a range and is checked at start (src/core/settings.ts): out of it, the
// start stops with CONFIG_INVALID naming the key, and the variable when the environment set it.

const refused = (message: RegExp | string) => (e: unknown) => {
  assert.ok(e instanceof LonghaulError, `a LonghaulError, not ${e}`);
  assert.equal(e.code, "CONFIG_INVALID");
  if (typeof message === "string") assert.equal(e.message, message);
  else assert.match(e.message, message);
  return true;
};

const empty = tempDir();
after(() => empty.cleanup());

/** The configuration `serve` would run with, from these variables alone. */
const fromEnv = (env: Record<string, string>) => readConfig(undefined, env, empty.dir);

describe("the environment's values are range-checked at start, naming the key and the variable", () => {
  test("a wait's default timeout past a year (1e30 once threw RangeError on every wait)", async () => {
    await assert.rejects(
      fromEnv({ LONGHAUL_WAITS_DEFAULT_TIMEOUT_S: "1e30" }),
      refused(
        "waits.default_timeout_s must be a whole number of seconds from 1 to 31536000 (LONGHAUL_WAITS_DEFAULT_TIMEOUT_S); got 1e30.",
      ),
    );
    for (const bad of ["0", "-5", "1.5", "31536001", "NaN", "60s"]) {
      await assert.rejects(
        fromEnv({ LONGHAUL_WAITS_DEFAULT_TIMEOUT_S: bad }),
        refused(
          new RegExp(`^waits\\.default_timeout_s .*LONGHAUL_WAITS_DEFAULT_TIMEOUT_S\\); got ${bad}\\.$`),
        ),
      );
    }
    for (const ok of ["1", "31536000"]) {
      const config = await fromEnv({ LONGHAUL_WAITS_DEFAULT_TIMEOUT_S: ok });
      assert.equal(config.waits?.default_timeout_s, Number(ok));
    }
  });

  test("a link lifetime that is born expired or lives for millennia", async () => {
    for (const bad of ["-1", "1e12", "0", "59"]) {
      await assert.rejects(
        fromEnv({ LONGHAUL_TOKENS_TTL_S: bad }),
        refused(
          `tokens.ttl_s must be a whole number of seconds from 60 to 31536000 (LONGHAUL_TOKENS_TTL_S); got ${bad}.`,
        ),
      );
    }
    assert.equal((await fromEnv({ LONGHAUL_TOKENS_TTL_S: "3600" })).tokens?.ttl_s, 3600);
  });

  test("a dedupe horizon of 1e300 seconds", async () => {
    await assert.rejects(
      fromEnv({ LONGHAUL_INBOX_DEDUPE_HORIZON_S: "1e300" }),
      refused(
        "inbox.dedupe_horizon_s must be a whole number of seconds from 3600 to 31536000 (LONGHAUL_INBOX_DEDUPE_HORIZON_S); got 1e300.",
      ),
    );
  });

  test("public_url: http or https with a host, and no credentials, query or fragment", async () => {
    for (const bad of [
      "javascript:alert(1)//",
      "ftp://files.example.com",
      "https://",
      "http:///path",
      "https://user:pw@example.com",
      "https://example.com/#frag",
      "https://example.com/?a=1",
      " https://example.com",
      "https:\\\\example.com",
      "example.com",
    ]) {
      await assert.rejects(
        fromEnv({ LONGHAUL_PUBLIC_URL: bad }),
        refused(/^public_url must be an http or https URL with a host .*\(LONGHAUL_PUBLIC_URL\); got /),
        bad,
      );
    }
    // A password in a refused URL is not repeated in the message.
    await assert.rejects(fromEnv({ LONGHAUL_PUBLIC_URL: "https://user:pw@example.com" }), (e: Error) => {
      assert.ok(!e.message.includes("pw"), e.message);
      return true;
    });
    for (const ok of [
      "https://longhaul.example.com",
      "http://127.0.0.1:8787",
      "http://[::1]:8787",
      "https://example.com/longhaul/",
      "HTTPS://Example.com",
    ]) {
      assert.equal((await fromEnv({ LONGHAUL_PUBLIC_URL: ok })).public_url, ok);
    }
  });

  test("longhaul dev's own URL, on any host it listens on, passes the check", () => {
    for (const [host, url] of [
      ["127.0.0.1", "http://127.0.0.1:8787"],
      ["0.0.0.0", "http://127.0.0.1:8787"],
      ["localhost", "http://localhost:8787"],
      ["::1", "http://[::1]:8787"],
      ["::", "http://[::1]:8787"],
    ] as const) {
      assert.equal(devPublicUrl(host, 8787), url);
      assert.ok(isPublicUrl(url), url);
    }
  });

  test("a boolean is true, false, 1 or 0 in any case; anything else is refused, not taken as false", async () => {
    for (const [text, value] of [
      ["True", true],
      ["TRUE", true],
      ["1", true],
      ["false", false],
      ["False", false],
      ["0", false],
    ] as const) {
      const config = await fromEnv({
        LONGHAUL_OUTBOUND_ALLOW_PRIVATE_NETWORKS: text,
        LONGHAUL_METRICS_PUBLIC: text,
      });
      assert.equal(config.outbound?.allow_private_networks, value, text);
      assert.equal(config.metrics?.public, value, text);
    }
    for (const bad of ["yes", "on", "2", "tru"]) {
      await assert.rejects(
        fromEnv({ LONGHAUL_METRICS_PUBLIC: bad }),
        refused(
          `metrics.public must be true or false (LONGHAUL_METRICS_PUBLIC: true, false, 1 or 0, in any case); got ${bad}.`,
        ),
      );
    }
  });

  test("every variable that sets a key refuses an absurd value, naming the key and the variable", async () => {
    const variables = envVariables();
    assert.ok(variables.size >= 15, `${variables.size} variables`);
    for (const [key, name] of variables) {
      await assert.rejects(
        fromEnv({ [name]: "1e300" }),
        refused(new RegExp(`^${key.replace(".", "\\.")} must be .*\\(${name}[:)].*; got 1e300\\.$`)),
        name,
      );
    }
  });

  test("the retry schedule: 1 to 50 entries, the first 0, each at most 7 days", async () => {
    for (const bad of ["[]", "[5, 10]", "[0, -1]", "[0, 604801]", `[${Array(51).fill(0).join(",")}]`, "5"]) {
      await assert.rejects(
        fromEnv({ LONGHAUL_OUTBOUND_RETRY_SCHEDULE_S: bad }),
        refused(
          /^outbound\.retry_schedule_s must be a list of 1 to 50 delays .*LONGHAUL_OUTBOUND_RETRY_SCHEDULE_S/,
        ),
        bad,
      );
    }
    const config = await fromEnv({ LONGHAUL_OUTBOUND_RETRY_SCHEDULE_S: "[0, 0.5, 604800]" });
    assert.deepEqual(config.outbound?.retry_schedule_s, [0, 0.5, 604800]);
  });

  test("each bad value is named in one message; the file's are named with the file", async () => {
    const tmp = tempDir();
    const file = join(tmp.dir, "longhaul.config.json");
    writeFileSync(file, JSON.stringify({ limits: { api_per_min: 1e300 }, reconciler: { poll_after_s: 90 } }));
    await assert.rejects(
      readConfig(undefined, { LONGHAUL_RECONCILER_POLL_AFTER_S: "-1" }, tmp.dir),
      refused(
        `reconciler.poll_after_s must be a whole number of seconds from 1 to 86400 (LONGHAUL_RECONCILER_POLL_AFTER_S); got -1. limits.api_per_min must be a whole number from 0 (off) to 10000000 (in ${file}); got 1e+300.`,
      ),
    );
    // A variable's good value stands in for the file's bad one it overrides.
    const fixed = await readConfig(undefined, { LONGHAUL_LIMITS_API_PER_MIN: "600" }, tmp.dir);
    assert.equal(fixed.limits?.api_per_min, 600);
    // A block that is not an object is not made one by a variable.
    writeFileSync(file, JSON.stringify({ waits: 5 }));
    await assert.rejects(
      readConfig(undefined, { LONGHAUL_WAITS_DEFAULT_TIMEOUT_S: "60" }, tmp.dir),
      refused(`waits must be an object (in ${file}); got 5.`),
    );
    tmp.cleanup();
  });

  test("a config object checks the same ranges", () => {
    assert.throws(
      () => checkConfig({ limits: { signal_retention_s: 1e12 } }),
      refused(
        /^limits\.signal_retention_s must be a number of seconds above 0 and at most 31536000 \(in the config\)/,
      ),
    );
    assert.throws(() => checkConfig({ outbound: { timeout_s: 121 } }), refused(/^outbound\.timeout_s /));
    assert.throws(
      () => checkConfig({ metrics: { listen: "127.0.0.1:70000" } }),
      refused(/^metrics\.listen /),
    );
  });

  test("storage_urls: credentials need both keys, unknown keys are named, and no secret is quoted", () => {
    const secret = "wJalrXUtnFEMI-K7MDENG-bPxRfiCY";
    const quoted = (e: unknown) => {
      assert.ok(!(e as Error).message.includes(secret), (e as Error).message);
      return true;
    };
    const config = (s3: Record<string, unknown>) => ({ storage_urls: { s3 } }) as unknown as LonghaulConfig;
    assert.throws(
      () => checkConfig(config({ secret_access_key: secret })),
      refused(
        "storage_urls.s3 must be an object with access_key_id and secret_access_key (in the config); got an object with the keys secret_access_key.",
      ),
    );
    assert.throws(() => checkConfig(config({ secret_access_key: secret })), quoted);
    assert.throws(
      () => checkConfig(config({ access_key_id: "AKID", secret_access_key: secret, bucket: "b" })),
      refused(/^Unknown key "storage_urls\.s3\.bucket"/),
    );
    assert.throws(
      () => checkConfig(config({ access_key_id: "AKID", secret_access_key: secret, endpoint: "ftp://x" })),
      refused(/^storage_urls\.s3\.endpoint must be an http or https URL/),
    );
    assert.throws(
      () => checkConfig({ storage_urls: { timeout_s: 0 } }),
      refused(/^storage_urls\.timeout_s /),
    );
    const ok = checkConfig(config({ access_key_id: "AKID", secret_access_key: secret, region: "eu-west-1" }));
    assert.equal(ok.storage_urls?.s3?.region, "eu-west-1");
  });
});

describe("createLonghaul checks its options against the same ranges, before it opens anything", () => {
  /** Starts and closes an app on a fresh SQLite file; when the start is refused, no file was made. */
  const start = async (opts: LonghaulOptions, env: Record<string, string> = {}) => {
    const tmp = tempDir();
    const db = join(tmp.dir, "longhaul.db");
    const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
    Object.assign(process.env, env);
    try {
      const app = await createLonghaul({
        databaseUrl: `sqlite:${db}`,
        logger: quietLog(),
        role: "api",
        ...opts,
      });
      await app.close();
    } catch (err) {
      assert.equal(existsSync(db), false, "a refused start opens no store");
      throw err;
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      tmp.cleanup();
    }
  };

  test("milliseconds past a year, a javascript: URL, a link lifetime below zero", async () => {
    await assert.rejects(
      start({ defaultTimeoutMs: 1e33 }),
      refused("defaultTimeoutMs must be a number of milliseconds from 1 to 31536000000; got 1e+33."),
    );
    await assert.rejects(start({ pollAfterMs: 0 }), refused(/^pollAfterMs must be /));
    await assert.rejects(
      start({ dedupeHorizonMs: Number.POSITIVE_INFINITY }),
      refused(/^dedupeHorizonMs must be .*got Infinity\.$/),
    );
    await assert.rejects(
      start({ publicUrl: "javascript:alert(1)//" }),
      refused(/^publicUrl must be an http or https URL/),
    );
    await assert.rejects(start({ tokens: { ttl_s: -1 } }), refused(/^tokens\.ttl_s must be /));
    await assert.rejects(
      start({ outbound: { retry_schedule_s: [5] } }),
      refused(/^outbound\.retry_schedule_s /),
    );
    await assert.rejects(start({ httpTimeouts: { headersMs: 1e30 } }), refused(/^httpTimeouts\.headersMs /));
    await assert.rejects(
      start({ limits: { hooks_per_min: 1e300 } }),
      refused(/^limits\.hooks_per_min must be a whole number from 0 \(off\) to 10000000; got 1e\+300\.$/),
    );
  });

  test("an admin key under 32 characters, from the option or from LONGHAUL_ADMIN_KEY", async () => {
    const short = "a".repeat(31);
    await assert.rejects(
      start({ adminKey: short }),
      refused(/^adminKey must be a string of at least 32 characters, .*; got a value of 31 characters\.$/),
    );
    await assert.rejects(
      start({}, { LONGHAUL_ADMIN_KEY: "letmein" }),
      refused(
        /^adminKey must be a string of at least 32 characters, .* \(LONGHAUL_ADMIN_KEY\); got a value of 7 characters\.$/,
      ),
    );
    // The key itself is never in the message.
    await assert.rejects(start({ adminKey: "hunter2" }), (e: Error) => !e.message.includes("hunter2"));
    // 32 characters start; an empty key is none (the admin API is off), as before.
    await start({ adminKey: "a".repeat(32) }).catch((e) => assert.fail(e));
    await start({}, { LONGHAUL_ADMIN_KEY: "" }).catch((e) => assert.fail(e));
  });
});

test("longhaul serve with a bad variable exits 1 with the message and no stack trace", async () => {
  const tmp = tempDir();
  writeFileSync(join(tmp.dir, "longhaul.config.json"), "{}\n");
  for (const [env, message] of [
    [{ LONGHAUL_WAITS_DEFAULT_TIMEOUT_S: "1e30" }, "(LONGHAUL_WAITS_DEFAULT_TIMEOUT_S); got 1e30."],
    [{ LONGHAUL_ADMIN_KEY: "short" }, "(LONGHAUL_ADMIN_KEY); got a value of 5 characters."],
  ] as const) {
    const db = join(tmp.dir, "serve.db");
    const args = [
      "serve",
      "--config",
      join(tmp.dir, "longhaul.config.json"),
      "--port",
      "0",
      "--host",
      "127.0.0.1",
    ];
    const child = spawn(process.execPath, [...CLI_FROM_SOURCE, ...args], {
      env: {
        ...process.env,
        LONGHAUL_LOG_LEVEL: "info",
        LONGHAUL_SECRET_KEY: TEST_SECRET_KEY,
        LONGHAUL_DATABASE_URL: `sqlite:${db}`,
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout!.on("data", (b: Buffer) => {
      out += b.toString();
    });
    let err = "";
    child.stderr!.on("data", (b: Buffer) => {
      err += b.toString();
    });
    let closed = false;
    const done = new Promise((r) => child.once("close", r)).then(() => {
      closed = true;
    });
    // Before the fix it started: a listening server is a failure, not a wait.
    await waitFor(() => closed || out.includes("is listening"), 30_000, "serve to exit or listen");
    if (!closed) child.kill("SIGKILL");
    await done;
    assert.equal(child.exitCode, 1, `serve exits 1 (stdout: ${out})`);
    assert.ok(err.startsWith("longhaul serve: "), err);
    assert.ok(err.includes(message), err);
    assert.ok(err.trimEnd().endsWith("(CONFIG_INVALID)"), err);
    assert.doesNotMatch(err, /^\s+at /m, "no stack trace");
    assert.equal(existsSync(db), false, "no store was opened");
  }
  tmp.cleanup();
});
