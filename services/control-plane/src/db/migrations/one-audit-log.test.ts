/**
 * Migration 0028 moves the key reveals (and the commerce admin actions once written beside them)
 * into audit_log, reading as the admin audit log read them before, and drops key_reveal_audit.
 */
import { randomUUID } from 'node:crypto';
import { createTestDatabase } from '@tollgate/test-harness';
import { type Kysely, sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { afterAll, expect, inject, it } from 'vitest';
import { listAudit } from '../../modules/audit/audit.service.ts';
import { openDatabase } from '../database.ts';
import { migrateToLatest } from '../migrate.ts';
import type { Database } from '../schema.ts';
import { migrations } from './index.ts';

const database = await createTestDatabase(inject('testServices').postgresUrl, 'one-audit-log');
const handle = await openDatabase({ databaseUrl: database.url, poolSize: 2, dataDir: '' });
afterAll(async () => {
  await handle.close();
  await database.drop();
});

it('moves every key-reveal row into audit_log, as the audit log read it, and drops the old table', async () => {
  const db = handle.db as unknown as Kysely<unknown>;
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: 'schema_migrations',
    migrationLockTableName: 'schema_migrations_lock',
    allowUnorderedMigrations: true,
  });
  const before = await migrator.migrateTo('0027_email_notices');
  if (before.error) throw before.error;
  const account = randomUUID();
  const key = randomUUID();
  const session = randomUUID();
  await sql`
    insert into key_reveal_audit (key_id, account_id, session_id, outcome, ip, user_agent, target_type, target_id, details,
                                  created_at)
    values (${key}::uuid, ${account}::uuid, ${session}::uuid, 'throttled', '10.0.0.1', 'ua', null, null, null,
            now() - interval '2 minutes'),
           (null, ${account}::uuid, null, 'promotion.create', '10.0.0.2', null, 'promotion', 'old-promotion',
            '{"code":"OLD10"}'::jsonb, now() - interval '1 minute')
  `.execute(db);

  await migrateToLatest(db);

  const { rows } = await sql<{
    name: string | null;
  }>`select to_regclass('key_reveal_audit')::text as name`.execute(db);
  expect(rows[0]?.name).toBeNull();
  const audit = await listAudit(handle.db as unknown as Kysely<Database>, {
    actorAccountId: account,
    limit: 10,
  });
  expect(audit.items).toMatchObject([
    {
      action: 'promotion.create',
      actor: { accountId: account },
      target: { type: 'promotion', id: 'old-promotion' },
      detail: { code: 'OLD10', sessionId: null },
      ip: '10.0.0.2',
    },
    {
      action: 'api_key.reveal',
      target: { type: 'api_key', id: key },
      detail: { outcome: 'throttled', sessionId: session },
      ip: '10.0.0.1',
      userAgent: 'ua',
    },
  ]);
});
