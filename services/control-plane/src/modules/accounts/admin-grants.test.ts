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

describe('admin credit adjustments with Idempotency-Key', () => {
  const adjust = (accountId: string, amount: string, key?: string) =>
    admin.request('POST', `/admin/accounts/${accountId}/credit-adjustments`, {
      body: { amount, note: 'correction' },
      ...(key ? { headers: { 'idempotency-key': key } } : {}),
    });

  it('a form sent five times at once adjusts once and is audited once with amount and reason', async () => {
    const customer = await member(context, 'adjusted');
    expect((await grant(customer.id, { credits: '1000' })).status).toBe(201);
    const answers = await Promise.all(Array.from({ length: 5 }, () => adjust(customer.id, '-300', 'form-1')));
    expect(answers.map((answer) => answer.status)).toEqual(Array(5).fill(201));
    expect(answers.filter((answer) => answer.body.data.replay === false)).toHaveLength(1);
    expect((await balancesOf(context.deps, customer.id)).credits).toBe(700n);
    const audit = await admin.request(
      'GET',
      `/admin/audit?action=admin.credit_adjustment&targetId=${customer.id}`,
    );
    expect(audit.body.data.items).toHaveLength(1);
    expect(audit.body.data.items[0]).toMatchObject({
      actor: { accountId: admin.id },
      target: { type: 'account', id: customer.id },
      detail: { amount: '-300', note: 'correction' },
    });
    // The key reused for another amount is refused; a grant form's key is its own.
    expect((await adjust(customer.id, '-301', 'form-1')).status).toBe(422);
    expect((await grant(customer.id, { credits: '300' }, 'form-1')).status).toBe(201);
    expect((await balancesOf(context.deps, customer.id)).credits).toBe(1000n);
    // Without a key each send is an adjustment of its own.
    await adjust(customer.id, '-100');
    await adjust(customer.id, '-100');
    expect((await balancesOf(context.deps, customer.id)).credits).toBe(800n);
  });
});
