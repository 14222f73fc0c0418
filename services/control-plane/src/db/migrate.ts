import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { type Kysely, sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { migrations } from './migrations/index.ts';

/** Where the SQL functions in force are defined, one file per concern (README.md there). */
export const FUNCTIONS_DIRECTORY = path.join(import.meta.dirname, 'functions');

/** The step's name in what migrateToLatest reports, when it (re)defines the functions. */
export const FUNCTIONS_STEP = 'functions';

/**
 * Applies every pending numbered migration, in name order, then the functions step; fails loudly
 * on the first error. Returns what it applied.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run before and beyond any one schema type
export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  const applied = await migrateNumbered(db);
  if (await applyFunctions(db, { force: applied.length > 0 })) applied.push(FUNCTIONS_STEP);
  return applied;
}

/** The numbered migrations alone: the schema's history, without the functions step. */
// biome-ignore lint/suspicious/noExplicitAny: as above
export async function migrateNumbered(db: Kysely<any>): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: 'schema_migrations',
    migrationLockTableName: 'schema_migrations_lock',
    // Numbers are handed out ahead of merging (0008 landed after 0009): a database that already
    // ran a later one still gets the earlier one applied. Each migration stands on its own.
    allowUnorderedMigrations: true,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? [])
    .filter((result) => result.status === 'Success')
    .map((result) => result.migrationName);
}

export interface FunctionFile {
  name: string;
  text: string;
}

export async function readFunctionFiles(): Promise<FunctionFile[]> {
  const names = (await readdir(FUNCTIONS_DIRECTORY)).filter((name) => name.endsWith('.sql')).sort();
  return Promise.all(
    names.map(async (name) => ({ name, text: await readFile(path.join(FUNCTIONS_DIRECTORY, name), 'utf8') })),
  );
}

function checksumOf(files: FunctionFile[]): string {
  const hash = createHash('sha256');
  for (const file of files) hash.update(`${file.name}\0${file.text}\0`);
  return hash.digest('hex');
}

/** Any fixed number: the functions step's advisory lock, so two processes never apply it at once. */
const FUNCTIONS_LOCK = 7_240_024;

/**
 * The repeatable step: every file of db/functions, run in one transaction, when their checksum
 * differs from the one recorded at the last run, or when `force` (a numbered migration ran, and
 * may have replaced or dropped a function). The files hold the bodies in force; the numbered
 * migrations that first created them stay as history. Returns whether it applied them.
 */
// biome-ignore lint/suspicious/noExplicitAny: as above
export async function applyFunctions(db: Kysely<any>, options: { force?: boolean } = {}): Promise<boolean> {
  const files = await readFunctionFiles();
  const checksum = checksumOf(files);
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${FUNCTIONS_LOCK})`.execute(trx);
    await sql`
      create table if not exists schema_functions (
        id boolean primary key default true check (id),
        checksum text not null,
        applied_at timestamptz not null default now()
      )`.execute(trx);
    const recorded = await sql<{ checksum: string }>`select checksum from schema_functions`.execute(trx);
    if (!options.force && recorded.rows[0]?.checksum === checksum) return false;
    // Bodies are checked as they are created: a function in SQL must follow what it calls.
    for (const file of files) await sql.raw(file.text).execute(trx);
    await sql`
      insert into schema_functions (checksum) values (${checksum})
      on conflict (id) do update set checksum = excluded.checksum, applied_at = now()`.execute(trx);
    return true;
  });
}
