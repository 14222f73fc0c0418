import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { balancesOf } from '../../../test/kit.ts';
import { type Member, member, seedCatalog } from '../../../test/resellers.ts';
import { verifyLedger } from '../billing/ledger-check.ts';

let context: TestContext;
let admin: Member;

beforeAll(async () => {
  context = await createTestContext('admin-grants', { TRUST_PROXY: 'true' });
  await seedCatalog(context);
  admin = await member(context, 'granter', { admin: true });
});
afterAll(async () => {
  await context.publicApp.mailer.drain();
  expect(await verifyLedger(context.deps.db)).toEqual([]);
  await context.close();
});

const grant = (accountId: string, body: Record<string, unknown>, key?: string) =>
  admin.request('POST', `/admin/accounts/${accountId}/grants`, {
    body: { note: 'goodwill', ...body },
    ...(key ? { headers: { 'idempotency-key': key } } : {}),
  });

async function creditRows(accountId: string) {
  return context.deps.db
    .selectFrom('ledger_entries')
    .select(['kind', 'available_delta'])
    .where('account_id', '=', accountId)
    .where('entitlement_id', 'is', null)
    .execute();
}

describe('admin credit grants with Idempotency-Key', () => {
  it('13 sends of one key, at once, grant the credit once', async () => {
    const customer = await member(context, 'idempotent');
    const answers = await Promise.all(
      Array.from({ length: 13 }, () => grant(customer.id, { credits: '100' }, 'credit-once')),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(13).fill(201));
    expect(answers.filter((answer) => answer.body.data.replay === false)).toHaveLength(1);
    expect((await balancesOf(context.deps, customer.id)).credits).toBe(100n);
    expect(await creditRows(customer.id)).toEqual([{ kind: 'grant', available_delta: 100n }]);
    const audited = await context.deps.db
      .selectFrom('audit_log')
      .select('action')
      .where('target_id', '=', customer.id)
      .where('action', '=', 'admin.grant')
      .execute();
    expect(audited).toHaveLength(1);

    // Without a key each send is a grant of its own.
    await grant(customer.id, { credits: '100' });
    await grant(customer.id, { credits: '100' });
    expect((await balancesOf(context.deps, customer.id)).credits).toBe(300n);
  });

  it('refuses the key reused for another amount, another account or a package grant', async () => {
    const customer = await member(context, 'reused');
    const other = await member(context, 'reused-other');
    expect((await grant(customer.id, { credits: '100' }, 'reused-key')).status).toBe(201);
    for (const [accountId, body] of [
      [customer.id, { credits: '101' }],
      [other.id, { credits: '100' }],
      [customer.id, { packageId: 'small' }],
    ] as const) {
      const refused = await grant(accountId, body, 'reused-key');
      expect(refused.status).toBe(422);
      expect(refused.body.code).toBe('validation_failed');
      expect(refused.body.errors.idempotencyKey).toBeDefined();
    }
    // A package grant's key is not taken by a credit grant either.
    expect((await grant(customer.id, { packageId: 'small' }, 'package-key')).status).toBe(201);
    expect((await grant(customer.id, { credits: '5' }, 'package-key')).status).toBe(422);
    expect((await balancesOf(context.deps, customer.id)).credits).toBe(100n);
    expect((await balancesOf(context.deps, other.id)).credits).toBe(0n);
  });
});
