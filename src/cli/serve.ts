import { parseArgs } from "node:util";
import { createLonghaul } from "../app.ts";
import { LonghaulError } from "../core/errors.ts";
import { providersFromConfig } from "../providers/from-config.ts";
import { engineOptions, loadConfig } from "./config.ts";
import { onShutdown } from "./shutdown.ts";

/** `longhaul serve`: the production server; store from LONGHAUL_DATABASE_URL, types from the config. */
export async function serve(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: "string" },
      role: { type: "string", default: "all" },
      port: { type: "string", default: process.env.PORT ?? "8787" },
      host: { type: "string", default: "0.0.0.0" },
    },
  });
  const role = values.role;
  if (role !== "all" && role !== "api" && role !== "worker") {
    throw new LonghaulError("CONFIG_INVALID", `--role must be all, api or worker, not "${role}".`);
  }
  const config = await loadConfig(values.config);
  const providers = providersFromConfig(config.providers ?? {});
  const app = await createLonghaul({
    taskTypes: config.taskTypes ?? [],
    providers,
    sources: config.sources ?? {},
    role,
    ...engineOptions(config),
    ...(config.tokens ? { tokens: config.tokens } : {}),
    ...(config.outbound ? { outbound: config.outbound } : {}),
    ...(config.public_url ? { publicUrl: config.public_url } : {}),
  });
  const url = await app.listen({ port: Number(values.port), host: values.host });
  onShutdown(() => app.close());
  app.log.info({ url, role }, "longhaul serve is listening");
}
