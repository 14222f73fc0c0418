/**
 * The SQL functions in force are the files of db/functions: a database migrated from empty and one
 * that had run every numbered migration before the functions step existed end with the same
 * functions, and their bodies are the files'.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { createTestDatabase, type TestDatabase } from '@tollgate/test-harness';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type DatabaseHandle, openDatabase } from './database.ts';
import {
  applyFunctions,
  FUNCTIONS_STEP,
  migrateNumbered,
  migrateToLatest,
  readFunctionFiles,
} from './migrate.ts';

interface Opened {
  database: TestDatabase;
  handle: DatabaseHandle;
}

const opened: Opened[] = [];

async function emptyDatabase(label: string): Promise<Kysely<unknown>> {
  const database = await createTestDatabase(inject('testServices').postgresUrl, label);
  const handle = await openDatabase({ databaseUrl: database.url, poolSize: 2, dataDir: '' });
  opened.push({ database, handle });
  return handle.db as unknown as Kysely<unknown>;
}

afterAll(async () => {
  for (const { database, handle } of opened) {
    await handle.close();
    await database.drop();
  }
});

/** Every function of the public schema: its name and its definition as Postgres prints it. */
async function functionsOf(db: Kysely<unknown>): Promise<Map<string, { definition: string; body: string }>> {
  const { rows } = await sql<{ name: string; definition: string; body: string }>`
    select p.proname as name, pg_get_functiondef(p.oid) as definition, p.prosrc as body
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = 'public'
    order by p.proname`.execute(db);
  return new Map(rows.map((row) => [row.name, { definition: row.definition, body: row.body }]));
}

/** Each function the files define, by name, with its body (what lies between `$fn$` and `$fn$;`). */
async function functionsOfFiles(): Promise<Map<string, string>> {
  const bodies = new Map<string, string>();
  for (const file of await readFunctionFiles()) {
    for (const match of file.text.matchAll(
      /create or replace function (\w+)\([\s\S]*?\$fn\$(\n[\s\S]*?\n)\$fn\$;/g,
    )) {
      const [, name, body] = match as unknown as [string, string, string];
      expect(bodies.has(name), `${name} is defined twice`).toBe(false);
      bodies.set(name, body);
    }
  }
  return bodies;
}

let fresh: Kysely<unknown>;
let upgraded: Kysely<unknown>;

beforeAll(async () => {
  [fresh, upgraded] = await Promise.all([
    emptyDatabase('functions_fresh'),
    emptyDatabase('functions_upgraded'),
  ]);
  const applied = await migrateToLatest(fresh);
  expect(applied.at(-1)).toBe(FUNCTIONS_STEP);
  // A database of before the functions step: every numbered migration, nothing else.
  await migrateNumbered(upgraded);
  expect(await migrateToLatest(upgraded)).toEqual([FUNCTIONS_STEP]);
}, 120_000);

describe('the SQL functions in force (db/functions)', () => {
  it('are the same in a fresh database and in one migrated to the last numbered migration', async () => {
    const [a, b] = await Promise.all([functionsOf(fresh), functionsOf(upgraded)]);
    expect([...a.keys()]).toEqual([...b.keys()]);
    for (const [name, { definition }] of a) expect(b.get(name)?.definition, name).toBe(definition);
  });

  it('have the bodies of the files, and no function is defined elsewhere', async () => {
    const files = await functionsOfFiles();
    const database = await functionsOf(fresh);
    expect([...database.keys()].sort()).toEqual([...files.keys()].sort());
    for (const [name, body] of files) expect(database.get(name)?.body, name).toBe(body);
  });

  it('are what applying the files again defines, arguments and attributes included', async () => {
    const before = await functionsOf(fresh);
    const rollback = new Error('rollback');
    // The files applied again, inside a transaction that is then undone.
    await expect(
      fresh.transaction().execute(async (trx) => {
        for (const file of await readFunctionFiles()) await sql.raw(file.text).execute(trx);
        expect(await functionsOf(trx)).toEqual(before);
        throw rollback;
      }),
    ).rejects.toBe(rollback);
  });

  it('are applied again only when the files change (their checksum) or a numbered migration ran', async () => {
    expect(await migrateToLatest(fresh)).toEqual([]);
    expect(await applyFunctions(fresh)).toBe(false);
    expect(await applyFunctions(fresh, { force: true })).toBe(true);
    await sql`update schema_functions set checksum = 'of other files'`.execute(fresh);
    expect(await migrateToLatest(fresh)).toEqual([FUNCTIONS_STEP]);
    expect(await migrateToLatest(fresh)).toEqual([]);
  });

  it('are defined by no numbered migration after the functions step came (0017)', async () => {
    const folder = path.join(import.meta.dirname, 'migrations');
    const later = (await readdir(folder)).filter((name) => /^\d{4}_/.test(name) && name > '0018');
    for (const name of later) {
      const text = await readFile(path.join(folder, name), 'utf8');
      expect(/create\s+(or\s+replace\s+)?function/i.test(text), `${name}: change db/functions instead`).toBe(
        false,
      );
    }
  });
});
