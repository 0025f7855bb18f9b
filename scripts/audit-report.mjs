// The dependency audit of CI (.ci/run): reads `npm audit --omit=dev --json` on stdin and prints
// what it found, one line per vulnerable package with its advisories and whether a fix exists.
//
// Exit status: 1 when a production dependency has a high or critical vulnerability; 0 for lower
// ones (printed loudly all the same), for none, and when the audit did not run. The registry
// may refuse the audit call (an npm registry mirror or proxy without the advisories endpoint
// answers 405): that is printed as "NOT audited", never as clean, and does not fail the run,
// since the tests say nothing about it.
import { readFileSync } from "node:fs";

const FAILING = new Set(["high", "critical"]);
const text = readFileSync(0, "utf8");

let report;
try {
  report = JSON.parse(text);
} catch {
  report = null;
}

const counts = report?.metadata?.vulnerabilities;
if (!counts || typeof report.vulnerabilities !== "object") {
  const why = report?.error?.summary || report?.message || text.trim().split("\n")[0] || "no output";
  console.error("!!! npm audit did not run, so the production dependencies were NOT audited.");
  console.error(`!!! The registry answered: ${why}`);
  console.error("!!! Run `npm audit --omit=dev` where the registry serves audits before a release.");
  process.exit(0);
}

const vulnerable = Object.values(report.vulnerabilities);
const audited = report.metadata.dependencies?.prod ?? report.metadata.dependencies?.total;
if (vulnerable.length === 0) {
  console.log(
    `== npm audit: no known vulnerabilities in the production dependencies (${audited ?? "?"} audited)`,
  );
  process.exit(0);
}

const order = ["critical", "high", "moderate", "low", "info"];
vulnerable.sort(
  (a, b) => order.indexOf(a.severity) - order.indexOf(b.severity) || a.name.localeCompare(b.name),
);
const summary = order.filter((s) => counts[s] > 0).map((s) => `${counts[s]} ${s}`);
console.error(
  `!!! npm audit: ${vulnerable.length} vulnerable production dependencies (${summary.join(", ")})`,
);
for (const v of vulnerable) {
  const advisories = (v.via ?? [])
    .map((via) => (typeof via === "string" ? `through ${via}` : `${via.title} ${via.url ?? ""}`.trim()))
    .join("; ");
  const fix =
    v.fixAvailable === true
      ? "fix: npm audit fix"
      : v.fixAvailable
        ? `fix: ${v.fixAvailable.name}@${v.fixAvailable.version}${v.fixAvailable.isSemVerMajor ? " (major)" : ""}`
        : "no fix yet";
  console.error(`!!!   ${v.severity} ${v.name} ${v.range ?? ""}: ${advisories} [${fix}]`);
}
const failing = vulnerable.filter((v) => FAILING.has(v.severity));
if (failing.length > 0) {
  console.error(`!!! ${failing.length} of them high or critical: failing.`);
  process.exit(1);
}
process.exit(0);
