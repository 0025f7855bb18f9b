import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { test } from "node:test";
import fc from "fast-check";
import { type ErrorCode, LonghaulError } from "../src/core/errors.ts";
import { httpStatusOf } from "../src/http/error-status.ts";
import { generateTokenKey, Keyring, keyringFromConfig, type TokenKey } from "../src/tokens/keyring.ts";
import { MAX_TOKEN_LENGTH, mintToken, type TokenClaims, verifyToken } from "../src/tokens/token.ts";

const K1: TokenKey = { id: "k1", secret: "test-secret-0123456789abcdef0123456789" };
const K2: TokenKey = { id: "k2", secret: "base64:q83vASNFZ4mrze8BI0VniavN7wEjRWeJq83vASNFZ4k=" };
const NOW = Date.UTC(2026, 0, 1);
const EXPIRES = Date.UTC(2026, 0, 3, 12);

const CLAIMS: Omit<TokenClaims, "keyId"> = {
  tenantId: "ten_acme",
  taskId: "t_01JGZ7Q3X5V8K2M4N6P8R0S2T4",
  stepId: "manager-approval",
  attempt: 2,
  purpose: "approve",
  expiresAt: EXPIRES,
  approver: "ana@example.com",
};

/** Computed once from the format and pasted here, so the format cannot change unnoticed. */
const VECTOR =
  "v1.eyJrIjoiazEiLCJ0biI6InRlbl9hY21lIiwidCI6InRfMDFKR1o3UTNYNVY4SzJNNE42UDhSMFMyVDQiLCJzIjoibWFuYWdlci1hcHByb3ZhbCIsImEiOjIsInAiOiJhcHByb3ZlIiwiZSI6MTc2NzQ0MTYwMCwidSI6ImFuYUBleGFtcGxlLmNvbSJ9.CAOi99XHHgKc6U0jLJXDAyO0KBZBnAtKAsSSOZEdr_s";
const VECTOR_PAYLOAD =
  '{"k":"k1","tn":"ten_acme","t":"t_01JGZ7Q3X5V8K2M4N6P8R0S2T4","s":"manager-approval","a":2,"p":"approve","e":1767441600,"u":"ana@example.com"}';

const TOKEN_CODES: ReadonlySet<string> = new Set([
  "TOKEN_MALFORMED",
  "TOKEN_KEY_UNKNOWN",
  "TOKEN_INVALID",
  "TOKEN_EXPIRED",
]);

function refused(fn: () => unknown, code: ErrorCode): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof LonghaulError, `a LonghaulError, not ${String(err)}`);
    assert.equal(err.code, code);
    return true;
  });
}

/** The code `verifyToken` fails with; fails the test if it verifies or throws anything else. */
function failureOf(keyring: Keyring, token: string, nowMs = NOW): string {
  try {
    verifyToken(keyring, token, nowMs);
  } catch (err) {
    assert.ok(err instanceof LonghaulError, `a LonghaulError, not ${String(err)}`);
    assert.ok(TOKEN_CODES.has(err.code), `a token code, not ${err.code}`);
    return err.code;
  }
  assert.fail(`${JSON.stringify(token.slice(0, 80))} verified`);
}

/** A token whose payload is exactly `json`, correctly signed with `key`: only its shape can be wrong. */
function signedPayload(json: string, key: TokenKey = K1): string {
  const bytes = Buffer.from(json, "utf8");
  const mac = Keyring.from([key]).hmac(key.id, bytes)!;
  return `v1.${bytes.toString("base64url")}.${mac.toString("base64url")}`;
}

function parts(token: string): [string, Buffer, Buffer] {
  const [version, payload, mac] = token.split(".") as [string, string, string];
  return [version, Buffer.from(payload, "base64url"), Buffer.from(mac, "base64url")];
}

function join(version: string, payload: Buffer, mac: Buffer): string {
  return `${version}.${payload.toString("base64url")}.${mac.toString("base64url")}`;
}

test("a minted token verifies and returns its claims", () => {
  const keyring = Keyring.from([K1]);
  assert.deepEqual(verifyToken(keyring, mintToken(keyring, CLAIMS), NOW), { ...CLAIMS, keyId: "k1" });

  const { approver: _, ...callback } = { ...CLAIMS, purpose: "callback" as const };
  const claims = verifyToken(keyring, mintToken(keyring, callback), NOW);
  assert.deepEqual(claims, { ...callback, keyId: "k1" });
  assert.equal("approver" in claims, false);
});

test("a fixed vector: the minted token is the documented format, byte for byte", () => {
  const token = mintToken(Keyring.from([K1]), CLAIMS);
  assert.equal(token, VECTOR);
  // The same token rebuilt from the format's description alone.
  const mac = createHmac("sha256", K1.secret).update(VECTOR_PAYLOAD).digest("base64url");
  assert.equal(token, `v1.${Buffer.from(VECTOR_PAYLOAD).toString("base64url")}.${mac}`);
});

test("expiry is kept to the second, rounded down", () => {
  const keyring = Keyring.from([K1]);
  const claims = verifyToken(keyring, mintToken(keyring, { ...CLAIMS, expiresAt: EXPIRES + 999 }), NOW);
  assert.equal(claims.expiresAt, EXPIRES);
});

test("a payload re-encoded with another tenant is refused as TOKEN_INVALID", () => {
  const keyring = Keyring.from([K1]);
  const [version, , mac] = parts(mintToken(keyring, CLAIMS));
  const forged = Buffer.from(VECTOR_PAYLOAD.replace("ten_acme", "ten_evil"));
  refused(() => verifyToken(keyring, join(version, forged, mac), NOW), "TOKEN_INVALID");
});

test("changing any byte of the signed payload is refused", () => {
  const keyring = Keyring.from([K1]);
  const [version, payload, mac] = parts(mintToken(keyring, CLAIMS));
  const codes = new Set<string>();
  for (let i = 0; i < payload.length; i++) {
    const changed = Buffer.from(payload);
    changed[i] = changed[i]! ^ 0x01;
    codes.add(failureOf(keyring, join(version, changed, mac)));
  }
  // Structural bytes break the shape, bytes of the key id name another key, the rest reach the MAC.
  assert.deepEqual([...codes].sort(), ["TOKEN_INVALID", "TOKEN_KEY_UNKNOWN", "TOKEN_MALFORMED"]);
});

test("a changed or lengthened MAC is refused as TOKEN_INVALID, a shortened one as TOKEN_MALFORMED", () => {
  const keyring = Keyring.from([K1]);
  const [version, payload, mac] = parts(mintToken(keyring, CLAIMS));
  for (let i = 0; i < mac.length; i++) {
    const changed = Buffer.from(mac);
    changed[i] = changed[i]! ^ 0x80;
    refused(() => verifyToken(keyring, join(version, payload, changed), NOW), "TOKEN_INVALID");
  }
  refused(
    () => verifyToken(keyring, join(version, payload, Buffer.concat([mac, Buffer.from([0])])), NOW),
    "TOKEN_INVALID",
  );
  // Cut short: the link lost its end on the way, which is what TOKEN_MALFORMED tells its holder.
  refused(() => verifyToken(keyring, join(version, payload, mac.subarray(0, 31)), NOW), "TOKEN_MALFORMED");
  refused(() => verifyToken(keyring, VECTOR.slice(0, -1), NOW), "TOKEN_MALFORMED");
  refused(() => verifyToken(keyring, join(version, payload, Buffer.alloc(1)), NOW), "TOKEN_MALFORMED");
});

test("a token with its last character changed to any other base64url character is TOKEN_INVALID, not TOKEN_MALFORMED", () => {
  const keyring = Keyring.from([K1]);
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  let tried = 0;
  for (const c of alphabet) {
    if (c === VECTOR.at(-1)) continue;
    tried++;
    refused(() => verifyToken(keyring, `${VECTOR.slice(0, -1)}${c}`, NOW), "TOKEN_INVALID");
  }
  assert.equal(tried, 63);
});

test("an unknown or altered version is refused as TOKEN_MALFORMED", () => {
  const keyring = Keyring.from([K1]);
  const rest = VECTOR.slice("v1".length);
  for (const version of ["v2", "V1", "v0", "", "v1 ", "v11"]) {
    refused(() => verifyToken(keyring, `${version}${rest}`, NOW), "TOKEN_MALFORMED");
  }
});

test("a second spelling of the same bytes is refused, so no token has two spellings", () => {
  const keyring = Keyring.from([K1]);
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  // A 32-byte MAC leaves two unused bits in its last character; setting one decodes the same.
  const last = VECTOR.at(-1)!;
  const sibling = alphabet[alphabet.indexOf(last) ^ 1]!;
  const respelled = `${VECTOR.slice(0, -1)}${sibling}`;
  assert.deepEqual(parts(respelled)[2], parts(VECTOR)[2]);
  refused(() => verifyToken(keyring, respelled, NOW), "TOKEN_INVALID");
});

test("changing any single character of a token is refused", () => {
  const keyring = Keyring.from([K1]);
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ ";
  for (let i = 0; i < VECTOR.length; i++) {
    for (const c of alphabet) {
      if (c === VECTOR[i]) continue;
      failureOf(keyring, `${VECTOR.slice(0, i)}${c}${VECTOR.slice(i + 1)}`);
    }
  }
});

test("a token signed by a key the keyring does not hold is refused as TOKEN_KEY_UNKNOWN", () => {
  const token = mintToken(
    Keyring.from([{ id: "k9", secret: "another-secret-of-another-deployment" }]),
    CLAIMS,
  );
  refused(() => verifyToken(Keyring.from([K1, K2]), token, NOW), "TOKEN_KEY_UNKNOWN");
  // Names that exist on every plain object are not keys either.
  for (const id of ["__proto__", "constructor", "toString"]) {
    refused(
      () => verifyToken(Keyring.from([K1]), signedPayload(VECTOR_PAYLOAD.replace('"k1"', `"${id}"`)), NOW),
      "TOKEN_KEY_UNKNOWN",
    );
  }
});

test("a token is valid until the millisecond before its expiry, then TOKEN_EXPIRED", () => {
  const keyring = Keyring.from([K1]);
  const token = mintToken(keyring, CLAIMS);
  assert.equal(verifyToken(keyring, token, EXPIRES - 1).expiresAt, EXPIRES);
  refused(() => verifyToken(keyring, token, EXPIRES), "TOKEN_EXPIRED");
  refused(() => verifyToken(keyring, token, EXPIRES + 86_400_000), "TOKEN_EXPIRED");
  refused(() => verifyToken(keyring, token, Number.NaN), "TOKEN_EXPIRED");
  const err = (() => {
    try {
      verifyToken(keyring, token, EXPIRES);
    } catch (e) {
      return e as LonghaulError;
    }
  })();
  assert.equal(httpStatusOf(err), 410);
  assert.match(err?.message ?? "", /ask for a new link/i);
});

test("checks run in order: shape, key, MAC, expiry", () => {
  const keyring = Keyring.from([K1]);
  const [version, payload, mac] = parts(mintToken(keyring, CLAIMS));
  const badMac = Buffer.from(mac);
  badMac[0] = badMac[0]! ^ 1;
  const late = EXPIRES + 1;
  // An expired token with a wrong MAC is a forgery, not an expired link.
  refused(() => verifyToken(keyring, join(version, payload, badMac), late), "TOKEN_INVALID");
  // An unknown key is reported before its MAC is looked at.
  const other = Keyring.from([K2]);
  refused(() => verifyToken(other, join(version, payload, badMac), late), "TOKEN_KEY_UNKNOWN");
  // A broken shape is reported before the key is looked up.
  refused(() => verifyToken(other, `v2.${payload.toString("base64url")}.${mac}`, late), "TOKEN_MALFORMED");
});

test("after rotation (new key first) old tokens still verify and new tokens use the new key", () => {
  const before = Keyring.from([K1]);
  const oldToken = mintToken(before, CLAIMS);
  const after = Keyring.from([K2, K1]);
  assert.equal(verifyToken(after, oldToken, NOW).keyId, "k1");
  const newToken = mintToken(after, CLAIMS);
  assert.equal(verifyToken(after, newToken, NOW).keyId, "k2");
  refused(() => verifyToken(before, newToken, NOW), "TOKEN_KEY_UNKNOWN");
  assert.deepEqual(after.keyIds, ["k2", "k1"]);
});

test("after retiring the old key its tokens are refused", () => {
  const oldToken = mintToken(Keyring.from([K1]), CLAIMS);
  const retired = new Keyring({ active: "k2", keys: [K1, K2], retired: ["k1"] });
  refused(() => verifyToken(retired, oldToken, NOW), "TOKEN_KEY_UNKNOWN");
  assert.equal(verifyToken(retired, mintToken(retired, CLAIMS), NOW).keyId, "k2");
  assert.deepEqual(retired.keyIds, ["k2"]);
  // Dropping the key from the list has the same effect.
  refused(() => verifyToken(Keyring.from([K2]), oldToken, NOW), "TOKEN_KEY_UNKNOWN");
});

test("garbage never throws anything but TOKEN_MALFORMED", () => {
  const keyring = Keyring.from([K1]);
  const payload = JSON.parse(VECTOR_PAYLOAD) as Record<string, unknown>;
  const variant = (change: Record<string, unknown>) =>
    signedPayload(JSON.stringify({ ...payload, ...change }));
  const without = (field: string) => {
    const { [field]: _, ...rest } = payload;
    return signedPayload(JSON.stringify(rest));
  };
  const garbage: Record<string, unknown> = {
    empty: "",
    "one part": "v1",
    "two parts": VECTOR.split(".").slice(0, 2).join("."),
    "four parts": `${VECTOR}.x`,
    "empty parts": "v1..",
    huge: `v1.${"A".repeat(1_000_000)}.${"A".repeat(43)}`,
    "one over the length cap": `${VECTOR}${"A".repeat(MAX_TOKEN_LENGTH - VECTOR.length + 1)}`,
    "not base64url": "v1.eyJr*IjoiazEi.CAOi99XHHgKc6U0jLJXDAyO0KBZBnAtKAsSSOZEdr_s",
    "padded base64": `${VECTOR}=`,
    "base64 instead of base64url": `v1.${Buffer.from(VECTOR_PAYLOAD).toString("base64")}.${"/".repeat(43)}`,
    "a dangling base64 character": `v1.${VECTOR.split(".")[1]}A.${VECTOR.split(".")[2]}`,
    "non-JSON payload": signedPayload("not json"),
    "invalid UTF-8 payload": `v1.${Buffer.from([0xff, 0xfe, 0x7b]).toString("base64url")}.${"A".repeat(43)}`,
    "JSON array": signedPayload("[1,2,3]"),
    "JSON null": signedPayload("null"),
    "JSON string": signedPayload('"v1"'),
    "a: 0": variant({ a: 0 }),
    "a: -1": variant({ a: -1 }),
    "a: 1.5": variant({ a: 1.5 }),
    "a as string": variant({ a: "1" }),
    "e as string": variant({ e: "1767441600" }),
    "e: -1": variant({ e: -1 }),
    "e beyond any date": variant({ e: 1e16 }),
    "e fractional": variant({ e: 1767441600.5 }),
    "unknown purpose": variant({ p: "delete" }),
    "empty tenant": variant({ tn: "" }),
    "tenant as number": variant({ tn: 7 }),
    "tenant too long": variant({ tn: "x".repeat(257) }),
    "key id as number": variant({ k: 1 }),
    "approver null": variant({ u: null }),
    "approver empty": variant({ u: "" }),
    "an extra field": variant({ admin: true }),
    "no step": without("s"),
    "no key id": without("k"),
    "no expiry": without("e"),
    undefined: undefined,
    number: 42,
    object: { token: VECTOR },
  };
  for (const [name, input] of Object.entries(garbage)) {
    assert.throws(
      () => verifyToken(keyring, input as string, NOW),
      (err: unknown) => err instanceof LonghaulError && err.code === "TOKEN_MALFORMED",
      name,
    );
  }
});

test("random input never throws anything but a token failure", () => {
  const keyring = Keyring.from([K1]);
  const tokenish = fc
    .tuple(
      fc.constantFrom("v1", "v2", ""),
      fc.oneof(fc.base64String(), fc.string(), fc.constant(VECTOR.split(".")[1]!)),
      fc.oneof(fc.base64String(), fc.string(), fc.constant(VECTOR.split(".")[2]!)),
    )
    .map(([v, p, m]) => `${v}.${p.replace(/[+/=]/g, "_")}.${m.replace(/[+/=]/g, "-")}`)
    .filter((t) => t !== VECTOR);
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.string({ unit: "binary" }), tokenish), (input) => {
      failureOf(keyring, input);
    }),
    { numRuns: 2000 },
  );
});

test("claims a token cannot carry are refused at minting", () => {
  const keyring = Keyring.from([K1]);
  const bad: Partial<TokenClaims>[] = [
    { attempt: 0 },
    { attempt: 1.5 },
    { stepId: "" },
    { tenantId: "x".repeat(257) },
    { purpose: "delete" as TokenClaims["purpose"] },
    { expiresAt: Number.NaN },
    { approver: "" },
  ];
  for (const change of bad) {
    refused(() => mintToken(keyring, { ...CLAIMS, ...change }), "VALIDATION_FAILED");
  }
  // Each field within its cap, but escaped characters push the whole token over the length cap.
  const quoted = '"'.repeat(256);
  refused(
    () =>
      mintToken(keyring, { ...CLAIMS, tenantId: quoted, taskId: quoted, stepId: quoted, approver: quoted }),
    "VALIDATION_FAILED",
  );
});

test("the token failures map to 401, and expiry to 410", () => {
  const status = (code: ErrorCode) => httpStatusOf(new LonghaulError(code, ""));
  assert.equal(status("TOKEN_MALFORMED"), 401);
  assert.equal(status("TOKEN_KEY_UNKNOWN"), 401);
  assert.equal(status("TOKEN_INVALID"), 401);
  assert.equal(status("TOKEN_EXPIRED"), 410);
});

test("a keyring refuses an invalid key list, without echoing secrets", () => {
  const cases: [string, () => unknown][] = [
    ["no keys", () => Keyring.from([])],
    ["duplicate ids", () => Keyring.from([K1, { ...K2, id: "k1" }])],
    ["empty secret", () => Keyring.from([{ id: "k1", secret: "" }])],
    ["short secret", () => Keyring.from([{ id: "k1", secret: "short-secret-15" }])],
    ["bad base64", () => Keyring.from([{ id: "k1", secret: "base64:not*base64*at*all*here*" }])],
    ["few base64 bytes", () => Keyring.from([{ id: "k1", secret: "base64:c2hvcnQ=" }])],
    ["empty id", () => Keyring.from([{ id: "", secret: K1.secret }])],
    ["id with a space", () => Keyring.from([{ id: "k 1", secret: K1.secret }])],
    ["secret not a string", () => Keyring.from([{ id: "k1", secret: 5 as unknown as string }])],
    ["active not listed", () => new Keyring({ active: "k3", keys: [K1, K2] })],
    ["active retired", () => new Keyring({ active: "k1", keys: [K1, K2], retired: ["k1"] })],
  ];
  for (const [name, fn] of cases) {
    assert.throws(
      fn,
      (err: unknown) =>
        err instanceof LonghaulError &&
        err.code === "CONFIG_INVALID" &&
        !err.message.includes("short-secret-15") &&
        !err.message.includes(K1.secret),
      name,
    );
  }
});

test("generateTokenKey makes a 32-byte key with an id like k_<8 hex>", () => {
  const a = generateTokenKey();
  const b = generateTokenKey();
  assert.match(a.id, /^k_[0-9a-f]{8}$/);
  assert.notEqual(a.id, b.id);
  assert.notEqual(a.secret, b.secret);
  assert.ok(a.secret.startsWith("base64:"));
  assert.equal(Buffer.from(a.secret.slice("base64:".length), "base64").length, 32);
  assert.equal(generateTokenKey("k_named").id, "k_named");
  const keyring = Keyring.from([a]);
  assert.equal(verifyToken(keyring, mintToken(keyring, CLAIMS), NOW).keyId, a.id);
});

/** A meta table with put-if-absent semantics, counting its writes. */
function metaTable(initial: string | null = null) {
  let value = initial;
  const calls = { reads: 0, writes: 0 };
  return {
    calls,
    stored: async () => {
      calls.reads++;
      return value;
    },
    store: async (json: string) => {
      calls.writes++;
      value ??= json;
      return value;
    },
  };
}

test("keyringFromConfig generates one key once and every later start reads the same key", async () => {
  const meta = metaTable();
  const first = await keyringFromConfig(undefined, meta.stored, meta.store);
  const second = await keyringFromConfig({}, meta.stored, meta.store);
  assert.equal(meta.calls.writes, 1);
  assert.equal(second.activeKeyId, first.activeKeyId);
  assert.match(first.activeKeyId, /^k_[0-9a-f]{8}$/);
  assert.equal(verifyToken(second, mintToken(first, CLAIMS), NOW).keyId, first.activeKeyId);
});

test("keyringFromConfig uses the value another node stored first when it loses the race", async () => {
  const winner = generateTokenKey("k_winner");
  const winnerJson = JSON.stringify({ keys: [winner] });
  // This node read nothing, but another node stored its key before this node's write.
  const meta = { stored: async () => null, store: async (_json: string) => winnerJson };
  const keyring = await keyringFromConfig(undefined, meta.stored, meta.store);
  assert.equal(keyring.activeKeyId, "k_winner");
  const winnerToken = mintToken(Keyring.from([winner]), CLAIMS);
  assert.equal(verifyToken(keyring, winnerToken, NOW).keyId, "k_winner");
});

test("keyringFromConfig: keys in the config win over keys in the store", async () => {
  const storedKey = generateTokenKey("k_stored");
  const meta = metaTable(JSON.stringify({ keys: [storedKey] }));
  const keyring = await keyringFromConfig({ keys: [K2, K1] }, meta.stored, meta.store);
  assert.equal(keyring.activeKeyId, "k2");
  assert.deepEqual(keyring.keyIds, ["k2", "k1"]);
  assert.deepEqual(meta.calls, { reads: 0, writes: 0 });
  refused(() => verifyToken(keyring, mintToken(Keyring.from([storedKey]), CLAIMS), NOW), "TOKEN_KEY_UNKNOWN");
});

test("keyringFromConfig refuses invalid config and unreadable stored keys", async () => {
  const meta = metaTable();
  const rejectsWith = (p: Promise<unknown>) =>
    assert.rejects(p, (err: unknown) => err instanceof LonghaulError && err.code === "CONFIG_INVALID");
  await rejectsWith(keyringFromConfig({ keys: [] }, meta.stored, meta.store));
  await rejectsWith(keyringFromConfig({ keys: [K1, K1] }, meta.stored, meta.store));
  await rejectsWith(keyringFromConfig({ keys: [{ id: "k1", secret: "" }] }, meta.stored, meta.store));
  for (const stored of ["not json", "[]", '{"keys": "k1"}', '{"keys": []}']) {
    const broken = metaTable(stored);
    await rejectsWith(keyringFromConfig(undefined, broken.stored, broken.store));
  }
});
