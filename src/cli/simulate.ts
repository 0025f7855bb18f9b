import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { LonghaulError } from "../core/errors.ts";
import { startSimulator } from "../providers/sim/simulator.ts";
import { onShutdown } from "./shutdown.ts";

function rate(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!(n >= 0 && n <= 1)) throw new LonghaulError("CONFIG_INVALID", `--${name} must be a rate from 0 to 1.`);
  return n;
}

/** `longhaul simulate`: the provider simulator alone, for tests and for `serve` deployments to try. */
export async function simulate(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: "string", default: "8788" },
      host: { type: "string", default: "127.0.0.1" },
      secret: { type: "string", default: process.env.LONGHAUL_SIM_SECRET },
      seed: { type: "string", default: "1" },
      "state-file": { type: "string" },
      duplicate: { type: "string" },
      reorder: { type: "string" },
      drop: { type: "string" },
      "fail-create": { type: "string" },
      "delay-ms": { type: "string" },
    },
  });
  const secret = values.secret ?? `whsec_${randomBytes(24).toString("base64")}`;
  let delayMs: [number, number] | undefined;
  if (values["delay-ms"]) {
    const [a, b] = values["delay-ms"].split(",").map(Number);
    if (!(a! >= 0 && b! >= a!))
      throw new LonghaulError("CONFIG_INVALID", "--delay-ms takes min,max in milliseconds.");
    delayMs = [a!, b!];
  }
  const chaos = {
    duplicate: rate("duplicate", values.duplicate),
    reorder: rate("reorder", values.reorder),
    drop: rate("drop", values.drop),
    failCreate: rate("fail-create", values["fail-create"]),
    delayMs,
  };
  const sim = await startSimulator({
    port: Number(values.port),
    host: values.host,
    secret,
    seed: Number(values.seed),
    chaos: Object.fromEntries(Object.entries(chaos).filter(([, v]) => v !== undefined)),
    ...(values["state-file"] ? { stateFile: values["state-file"] } : {}),
  });
  onShutdown(() => sim.close());
  console.log(`longhaul simulator listening on ${sim.url}\nsigning secret: ${secret}`);
}
