import { type MigrationStatus, refuseNewer } from "../store/migrations.ts";
import { openStore } from "../store/open-store.ts";
import { databaseUrl, openExistingStore } from "./store.ts";

interface MigrateOptions {
  databaseUrl?: string;
  dryRun?: boolean;
  json?: boolean;
}

/** `longhaul migrate`: applies the pending migrations; with `--dry-run`, lists them and changes nothing. */
export async function migrateCommand(o: MigrateOptions): Promise<void> {
  const url = databaseUrl(o.databaseUrl);
  if (o.dryRun) {
    const status = await readStatus(url);
    if (o.json) console.log(JSON.stringify({ pending: status.pending }, null, 2));
    else if (status.pending.length === 0) console.log("Nothing to apply: the schema is up to date.");
    else {
      console.log(`Would apply ${status.pending.length} ${plural(status.pending.length)}:`);
      for (const m of status.pending) console.log(`  ${m.name}`);
    }
    return;
  }
  const store = await openStore(url);
  try {
    const { from, to } = await store.migrate();
    console.log(
      from === to
        ? `Schema is up to date (version ${to}).`
        : `Migrated schema from version ${from} to ${to}.`,
    );
  } finally {
    await store.close();
  }
}

/** `longhaul migrate status`: the migrations applied, with when, and those pending; changes nothing. */
export async function migrateStatus(o: MigrateOptions): Promise<void> {
  const status = await readStatus(databaseUrl(o.databaseUrl));
  if (o.json) {
    console.log(
      JSON.stringify(
        {
          applied: status.applied.map((m) => ({
            version: m.version,
            name: m.name,
            applied_at: new Date(m.appliedAt).toISOString(),
          })),
          pending: status.pending,
        },
        null,
        2,
      ),
    );
    return;
  }
  for (const m of status.applied) console.log(`applied  ${m.name}  ${new Date(m.appliedAt).toISOString()}`);
  for (const m of status.pending) console.log(`pending  ${m.name}`);
  console.log(
    status.pending.length === 0
      ? "The schema is up to date."
      : `${status.pending.length} ${plural(status.pending.length)} pending: run \`longhaul migrate\`.`,
  );
}

async function readStatus(url: string): Promise<MigrationStatus> {
  const store = await openExistingStore(url, { migrated: false });
  try {
    const status = await store.migrationStatus();
    refuseNewer(status.applied.at(-1)?.version ?? 0, status.latest);
    return status;
  } finally {
    await store.close();
  }
}

const plural = (n: number) => (n === 1 ? "migration" : "migrations");
