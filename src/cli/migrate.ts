import { openStore } from "../store/open-store.ts";

export async function migrateCommand(_argv: string[]): Promise<void> {
  const url = process.env.LONGHAUL_DATABASE_URL ?? "sqlite:.longhaul/longhaul.db";
  const store = await openStore(url);
  const { from, to } = await store.migrate();
  await store.close();
  console.log(
    from === to ? `Schema is up to date (version ${to}).` : `Migrated schema from version ${from} to ${to}.`,
  );
}
