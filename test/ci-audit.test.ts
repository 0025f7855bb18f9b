import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

// CI's dependency audit (.ci/run, scripts/audit-report.mjs): findings are printed, a high or
// critical one fails the run, and an audit the registry refuses is said to be not done.

const ROOT = join(import.meta.dirname, "..");
const report = (stdin: string) => {
  const r = spawnSync(process.execPath, [join(ROOT, "scripts", "audit-report.mjs")], { input: stdin });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
};

const audit = (vulnerabilities: Record<string, unknown>, counts: Record<string, number>) =>
  JSON.stringify({
    auditReportVersion: 2,
    vulnerabilities,
    metadata: {
      vulnerabilities: { info: 0, low: 0, moderate: 0, high: 0, critical: 0, total: 0, ...counts },
      dependencies: { prod: 120, dev: 300, optional: 0, peer: 0, peerOptional: 0, total: 420 },
    },
  });

test(".ci/run audits the production dependencies through the report", () => {
  const ci = readFileSync(join(ROOT, ".ci", "run"), "utf8");
  assert.match(ci, /npm audit --omit=dev --json\) \|\| true\n.*\| node scripts\/audit-report\.mjs/);
});

test("a refused audit (405 from the registry) is reported as not done, and does not fail", () => {
  const refused = JSON.stringify({
    message: "405 Method Not Allowed - POST /-/npm/v1/security/advisories/bulk",
    statusCode: 405,
    error: { summary: "", detail: "" },
  });
  for (const stdin of [refused, "", "not json"]) {
    const r = report(stdin);
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, /NOT audited/);
  }
  assert.match(report(refused).out, /405 Method Not Allowed/);
});

test("findings are printed, each with its advisory and fix; a high or critical one fails", () => {
  const high = audit(
    {
      "fast-thing": {
        name: "fast-thing",
        severity: "high",
        via: [{ title: "Prototype Pollution", url: "https://example.com/advisories/1", severity: "high" }],
        range: "<2.1.0",
        fixAvailable: { name: "fast-thing", version: "2.1.0", isSemVerMajor: false },
      },
      wrapper: { name: "wrapper", severity: "moderate", via: ["fast-thing"], range: "*", fixAvailable: true },
    },
    { high: 1, moderate: 1, total: 2 },
  );
  const r = report(high);
  assert.equal(r.status, 1, r.out);
  assert.match(r.out, /2 vulnerable production dependencies \(1 high, 1 moderate\)/);
  assert.match(
    r.out,
    /high fast-thing <2\.1\.0: Prototype Pollution https:\/\/example\.com\/advisories\/1 \[fix: fast-thing@2\.1\.0\]/,
  );
  assert.match(r.out, /moderate wrapper \*: through fast-thing \[fix: npm audit fix\]/);

  const moderate = audit(
    {
      slow: {
        name: "slow",
        severity: "moderate",
        via: [{ title: "ReDoS" }],
        range: "<1",
        fixAvailable: false,
      },
    },
    { moderate: 1, total: 1 },
  );
  const m = report(moderate);
  assert.equal(m.status, 0, m.out);
  assert.match(m.out, /!!!\s+moderate slow <1: ReDoS \[no fix yet\]/);
});

test("a clean audit says how many dependencies it covered", () => {
  const r = report(audit({}, {}));
  assert.equal(r.status, 0);
  assert.match(r.out, /no known vulnerabilities in the production dependencies \(120 audited\)/);
});
