import assert from "node:assert/strict";
import { test } from "node:test";
import { loadClient } from "../src/sinks/load-client.ts";

test("a broker client that is not installed is named, with the command that installs it", async () => {
  const missing = "longhaul-no-such-broker-client";
  await assert.rejects(
    loadClient(missing, () => import(missing)),
    (err: Error) =>
      err.message ===
        `${missing} is not installed; it is an optional dependency of longhaul that this sink needs. Run \`npm install ${missing}\`.` &&
      (err.cause as NodeJS.ErrnoException).code === "ERR_MODULE_NOT_FOUND",
  );
});

test("a client that loads is returned, and any other failure passes through unchanged", async () => {
  assert.equal(await loadClient("x", async () => 42), 42);
  const boom = new Error("broken package");
  await assert.rejects(
    loadClient("x", () => Promise.reject(boom)),
    (err) => err === boom,
  );
});
