import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { parse } from "yaml";
import { freePort, sleep, tempDir, waitFor } from "./helpers.ts";
import { dropSchemas, freshSchemaName, pgAvailableOrReport, pgUnreachable, pgUrl } from "./pg-env.ts";
import {
  installOrSkip,
  jsonApi,
  node,
  npm,
  packTarball,
  ROOT,
  type Running,
  startNode,
  tarballKb,
} from "./tarball.ts";

// The deployment of the Dockerfile and compose.yaml, run the same way on this machine (no
// container engine runs here, so the image itself is not built): the tarball installed with
// --omit=dev into a scratch /app as the image's second stage does, then the compose services'
// commands through the image's ENTRYPOINT, with their environment, on a fresh PostgreSQL
// schema: `migrate` once, one `api` and two `worker` processes; a tenant from the admin API, a
// task submitted to the api and run to `succeeded` by the workers; SIGTERM, exit 0 each.

const dockerfile = readFileSync(join(ROOT, "Dockerfile"), "utf8");
const compose = parse(readFileSync(join(ROOT, "compose.yaml"), "utf8"), { merge: true }) as {
  services: Record<string, Service>;
};

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  deploy?: { replicas?: number };
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test?: unknown; disable?: boolean };
}

/** The instructions of the Dockerfile, line continuations joined, comments left out. */
function instructions(text: string): { op: string; args: string }[] {
  return text
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"))
    .map((l) => {
      const [op, ...rest] = l.split(/\s+/);
      return { op: op!.toUpperCase(), args: rest.join(" ") };
    });
}

/** Compose's interpolation of `${VAR}`, `${VAR:-default}` and `${VAR:?message}` (an error when unset or empty). */
function interpolate(value: string, env: Record<string, string>): string {
  return value.replace(/\$\{(\w+)(?::([?-])([^}]*))?\}/g, (_, name: string, op?: string, arg?: string) => {
    const v = env[name];
    if (v !== undefined && v !== "") return v;
    if (op === "?") throw new Error(`${name}: ${arg}`);
    return op === "-" ? (arg ?? "") : "";
  });
}

const environmentOf = (service: Service, env: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(service.environment ?? {}).map(([k, v]) => [k, interpolate(v, env)]));

/**
 * The Dockerfile's stages, each `FROM` with the global `ARG`s before the first one (`ARG
 * NAME=default`) put in for `${NAME}`, as a build without `--build-arg` sees them.
 */
const dockerStages = () => {
  const stages: { from: string; ops: { op: string; args: string }[] }[] = [];
  const args = new Map<string, string>();
  for (const i of instructions(dockerfile)) {
    if (i.op === "ARG" && stages.length === 0) {
      const [name, value] = i.args.split("=", 2);
      args.set(name!, value ?? "");
    } else if (i.op === "FROM") {
      const from = i.args.replace(
        /\$\{(\w+)\}|\$(\w+)/g,
        (m, a?: string, b?: string) => args.get((a ?? b)!) ?? m,
      );
      stages.push({ from, ops: [] });
    } else stages.at(-1)?.ops.push(i);
  }
  return stages;
};
const last = (ops: { op: string; args: string }[], op: string) => ops.filter((o) => o.op === op).at(-1)?.args;

test("the Dockerfile builds in one stage and runs the installed package, unprivileged, in another", () => {
  const [build, run, ...more] = dockerStages();
  assert.equal(more.length, 0, "two stages");
  // Both stages on one Node.js line, the active LTS (Node 24); the build argument NODE_VERSION
  // moves them together.
  assert.match(dockerfile, /^ARG NODE_VERSION=24$/m);
  const froms = instructions(dockerfile).filter((i) => i.op === "FROM");
  assert.match(froms[0]!.args, /^node:\$\{NODE_VERSION\} AS build$/);
  assert.match(froms[1]!.args, /^node:\$\{NODE_VERSION\}-slim$/);
  assert.match(build!.from, /^node:24 AS build$/i);
  const buildRuns = build!.ops.filter((o) => o.op === "RUN").map((o) => o.args);
  assert.ok(
    buildRuns.some((r) => r.includes("npm ci")),
    "stage 1 installs from the lock file",
  );
  assert.ok(
    buildRuns.some((r) => r.includes("npm run build") && r.includes("npm pack")),
    "stage 1 builds and packs",
  );
  assert.match(run!.from, /^node:24-slim$/);
  const stage2Run = run!.ops
    .filter((o) => o.op === "RUN")
    .map((o) => o.args)
    .join("\n");
  assert.match(
    stage2Run,
    /tar -xzf \/tmp\/pkg\/longhaul-\*\.tgz -C \/app --strip-components=1/,
    "stage 2 unpacks the tarball",
  );
  assert.match(stage2Run, /cp \/tmp\/pkg\/package-lock\.json \/app\//, "with the lock file of the build");
  assert.match(
    stage2Run,
    /npm ci --omit=dev --ignore-scripts/,
    "stage 2 installs production dependencies only, from the lock file",
  );
  assert.match(stage2Run, /npm rebuild better-sqlite3/, "and builds the native module");
  assert.ok(
    run!.ops.some((o) => o.op === "COPY" && o.args === "--from=build /src/package-lock.json /tmp/pkg/"),
    "the lock file comes from the build stage",
  );
  assert.equal(last(run!.ops, "USER"), "node");
  assert.equal(last(run!.ops, "EXPOSE"), "8787");
  // Liveness only: a database outage must not restart a healthy container.
  assert.match(last(run!.ops, "HEALTHCHECK") ?? "", /CMD \["node", "-e", ".*\/livez/);
  assert.deepEqual(JSON.parse(last(run!.ops, "ENTRYPOINT")!), ["node", "/app/bin/longhaul.mjs"]);
  assert.deepEqual(JSON.parse(last(run!.ops, "CMD")!), ["serve"]);
  // The USER comes after the install, so the installed files are not the service's to change.
  const ops = run!.ops.map((o) => o.op);
  assert.ok(ops.lastIndexOf("RUN") < ops.indexOf("USER"));
});

test("compose.yaml: postgres, a one-shot migrate, an api, two workers; secrets required from the environment", () => {
  const s = compose.services;
  assert.deepEqual(Object.keys(s).sort(), ["api", "migrate", "postgres", "worker"]);
  assert.equal(s.postgres!.image, "postgres:15");
  assert.ok(s.postgres!.healthcheck, "postgres has a healthcheck");
  assert.deepEqual(s.migrate!.command, ["migrate"]);
  assert.equal(s.migrate!.depends_on?.postgres?.condition, "service_healthy");
  assert.deepEqual(s.api!.command, ["serve", "--role", "api"]);
  assert.deepEqual(s.api!.ports, ["8787:8787"]);
  assert.deepEqual(s.worker!.command, ["serve", "--role", "worker"]);
  assert.equal(s.worker!.deploy?.replicas, 2);
  for (const name of ["api", "worker"]) {
    assert.equal(s[name]!.depends_on?.migrate?.condition, "service_completed_successfully", name);
  }
  // The same image for every longhaul service.
  assert.equal(new Set([s.migrate!.image, s.api!.image, s.worker!.image]).size, 1);

  const env = {
    POSTGRES_PASSWORD: "pw",
    LONGHAUL_SECRET_KEY: "k",
    LONGHAUL_ADMIN_KEY: "a".repeat(32),
  };
  assert.deepEqual(environmentOf(s.api!, env), {
    LONGHAUL_DATABASE_URL: "postgres://longhaul:pw@postgres:5432/longhaul",
    LONGHAUL_SECRET_KEY: "k",
    LONGHAUL_SECRET_KEYS: "",
    LONGHAUL_PUBLIC_URL: "http://localhost:8787",
    LONGHAUL_ADMIN_KEY: "a".repeat(32),
  });
  assert.deepEqual(Object.keys(environmentOf(s.worker!, env)).sort(), [
    "LONGHAUL_DATABASE_URL",
    "LONGHAUL_PUBLIC_URL",
    "LONGHAUL_SECRET_KEY",
    "LONGHAUL_SECRET_KEYS",
  ]);
  // Callback and approval links point where providers and browsers reach the api, when set.
  assert.equal(
    environmentOf(s.worker!, { ...env, LONGHAUL_PUBLIC_URL: "https://lh.example.com" }).LONGHAUL_PUBLIC_URL,
    "https://lh.example.com",
  );
  // The api is ready when its store answers; the workers keep the image's liveness probe.
  assert.match(JSON.stringify(s.api!.healthcheck?.test), /\/readyz/);
  assert.equal(s.worker!.healthcheck, undefined);
  // Keys for reading only, during a key change, pass through when set.
  assert.equal(environmentOf(s.worker!, { ...env, LONGHAUL_SECRET_KEYS: "old" }).LONGHAUL_SECRET_KEYS, "old");
  // Each secret is required: compose refuses to start without it.
  for (const missing of Object.keys(env)) {
    const without = { ...env, [missing]: "" };
    assert.throws(() => environmentOf(s.api!, without), new RegExp(missing), `api without ${missing}`);
  }
});

const unreachable = await pgUnreachable();
if (pgAvailableOrReport(unreachable, "the compose deployment on PostgreSQL")) {
  test("the compose services' commands run on the installed package: migrate, an api, two workers", {
    timeout: 15 * 60_000,
  }, async (t) => {
    const started = Date.now();
    const seconds = () => `${((Date.now() - started) / 1000).toFixed(0)} s`;
    const tmp = tempDir("longhaul-deploy-");
    const schema = freshSchemaName("lh_deploy");
    const running: Running[] = [];
    try {
      const tarball = await packTarball(tmp.dir);
      t.diagnostic(`${basename(tarball)}: ${tarballKb(tarball)}, packed in ${seconds()}`);

      // The image's /app: the tarball and its production dependencies, as stage 2 installs them.
      const app = join(tmp.dir, "app");
      mkdirSync(app);
      await promisify(execFile)("tar", ["-xzf", tarball, "-C", app, "--strip-components=1"]);
      copyFileSync(join(ROOT, "package-lock.json"), join(app, "package-lock.json"));
      if (!(await installOrSkip(t, app, ["--omit=dev", "--ignore-scripts"], "deploy.test.ts", "ci"))) return;
      await npm(["rebuild", "better-sqlite3"], app);
      t.diagnostic(`installed from the lock file with --omit=dev at ${seconds()}`);
      for (const dev of ["typescript", "vite", "@biomejs/biome", "zod"]) {
        assert.ok(!existsSync(join(app, "node_modules", dev)), `${dev} (a devDependency) is not installed`);
      }

      // ENTRYPOINT, with the image's /app at the scratch folder.
      const [, stage2] = dockerStages();
      const entrypoint = (JSON.parse(last(stage2!.ops, "ENTRYPOINT")!) as string[]).map((a) =>
        a.replace(/^\/app\//, `${app}/`),
      );
      assert.equal(entrypoint[0], "node");
      const argsOf = (name: string) => [...entrypoint.slice(1), ...compose.services[name]!.command!];

      // The environment compose would pass, its secrets generated, the database a fresh schema.
      const env = {
        POSTGRES_PASSWORD: randomBytes(8).toString("hex"),
        LONGHAUL_SECRET_KEY: randomBytes(32).toString("base64"),
        LONGHAUL_ADMIN_KEY: randomBytes(24).toString("base64url"),
      };
      const envOf = (name: string, extra: Record<string, string> = {}) => ({
        ...environmentOf(compose.services[name]!, env),
        LONGHAUL_DATABASE_URL: pgUrl(schema, `deploy-${name}`),
        LONGHAUL_LOG_LEVEL: "warn",
        ...extra,
      });

      const migrated = await node(argsOf("migrate"), app, envOf("migrate"));
      assert.match(migrated.stdout, /Migrated schema from version 0 to \d+/);

      // One api and two workers, each on a port of its own (each container has its own address).
      // The image's HEALTHCHECK command, run as the container would run it, with its environment.
      const healthcheck = JSON.parse(
        /CMD (\[.*\])$/.exec(last(stage2!.ops, "HEALTHCHECK")!)![1]!,
      ) as string[];
      assert.equal(healthcheck[0], "node");
      const healthy = async (env: Record<string, string>) =>
        node(healthcheck.slice(1), app, env, 10_000).then(
          () => true,
          () => false,
        );
      const start = async (name: string) => {
        const port = await freePort();
        const env = envOf(name, { LONGHAUL_PORT: String(port) });
        assert.equal(await healthy(env), false, "the healthcheck fails while nothing listens");
        const p = startNode(argsOf(name), app, env);
        running.push(p);
        await waitFor(
          async () => {
            if (p.child.exitCode !== null)
              throw new Error(`${name} exited ${p.child.exitCode}: ${p.output()}`);
            return healthy(env);
          },
          30_000,
          `${name}'s healthcheck to pass`,
        );
        return `http://127.0.0.1:${port}`;
      };
      const api = await start("api");

      const created = await fetch(`${api}/v1/admin/tenants`, {
        method: "POST",
        headers: { authorization: `Bearer ${env.LONGHAUL_ADMIN_KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "acme" }),
      });
      assert.equal(created.status, 201, await created.clone().text());
      const { api_key: key } = (await created.json()) as { api_key: string };
      const call = jsonApi(api, key);

      // `graph` is what serve registers without a config; a sleep node needs a worker to end.
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) {
        const r = await call("/v1/tasks", {
          type: "graph",
          input: { nodes: [{ id: "nap", kind: "sleep", with: { duration: "200ms" } }] },
        });
        assert.equal(r.status, 202, JSON.stringify(r.body));
        ids.push(r.body.task_id);
      }
      // The api runs no work: the tasks wait for the workers.
      await sleep(1000);
      for (const id of ids) assert.equal((await call(`/v1/tasks/${id}`)).body.status, "pending");

      await Promise.all([start("worker"), start("worker")]);
      t.diagnostic(`api and two workers up at ${seconds()}`);
      for (const id of ids) {
        const done = await waitFor(
          async () => {
            const r = await call(`/v1/tasks/${id}`);
            return ["succeeded", "failed", "canceled", "timed_out"].includes(r.body.status) ? r.body : null;
          },
          30_000,
          `task ${id} to end`,
        );
        assert.equal(done.status, "succeeded", JSON.stringify(done));
      }
      t.diagnostic(`4 tasks succeeded at ${seconds()}`);

      const codes = await Promise.all(running.map((p) => p.stop("SIGTERM")));
      assert.deepEqual(codes, [0, 0, 0], running.map((p) => p.output()).join("\n---\n"));
    } finally {
      await Promise.all(running.map((p) => p.stop("SIGKILL")));
      await dropSchemas([schema]).catch(() => {});
      tmp.cleanup();
    }
  });
}
