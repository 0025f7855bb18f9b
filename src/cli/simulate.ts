import { randomBytes } from "node:crypto";
import { startSimulator } from "../providers/sim/simulator.ts";
import { onShutdown } from "./shutdown.ts";

export interface SimulateOptions {
  port: number;
  host: string;
  secret?: string;
  seed: number;
  stateFile?: string;
  duplicate?: number;
  reorder?: number;
  drop?: number;
  failCreate?: number;
  throttleCreate?: number;
  retryAfter?: number;
  delayMs?: [number, number];
}

/** `longhaul simulate`: the provider simulator alone, for tests and for `serve` deployments to try. */
export async function simulate(o: SimulateOptions): Promise<void> {
  const secret = o.secret ?? `whsec_${randomBytes(24).toString("base64")}`;
  const chaos = {
    duplicate: o.duplicate,
    reorder: o.reorder,
    drop: o.drop,
    failCreate: o.failCreate,
    throttleCreate: o.throttleCreate,
    retryAfterS: o.retryAfter,
    delayMs: o.delayMs,
  };
  const sim = await startSimulator({
    port: o.port,
    host: o.host,
    secret,
    seed: o.seed,
    chaos: Object.fromEntries(Object.entries(chaos).filter(([, v]) => v !== undefined)),
    ...(o.stateFile ? { stateFile: o.stateFile } : {}),
  });
  onShutdown(() => sim.close());
  console.log(`longhaul simulator listening on ${sim.url}\nsigning secret: ${secret}`);
}
