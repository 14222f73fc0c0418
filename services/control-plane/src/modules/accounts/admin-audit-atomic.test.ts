/**
 * An admin's money and status changes commit with their audit row or not at all: when the audit
 * row cannot be written (a trigger of this test's database refuses it), the change is rolled back
 * and the admin sees an error; once the row can be written, the same change goes through.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditRefusal } from '../../../test/audit-refusal.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { balancesOf } from '../../../test/kit.ts';
import { type Member, member, seedCatalog } from '../../../test/resellers.ts';
import { verifyLedger } from '../billing/ledger-check.ts';

const ENGINES = [
  ['postgres', false],
  ['hot tier', true],
] as const;

describe.each(ENGINES)('an admin change and its audit row commit together (%s)', (_engine, hotTier) => {
  let context: TestContext;
  let admin: Member;
  let refusal: Awaited<ReturnType<typeof auditRefusal>>;

  beforeAll(async () => {
    context = await createTestContext('admin-audit-atomic', { TRUST_PROXY: 'true' }, { hotTier });
    await seedCatalog(context);
    admin = await member(context, 'auditor', { admin: true });
    refusal = await auditRefusal(context);
  });
  afterAll(async () => {
    await context.publicApp.mailer.drain();
    expect(await verifyLedger(context.deps.db)).toEqual([]);
    await context.close();
  });

  const refuseAuditOf = (subject: string) => refusal.refuse(subject);
  const allowAuditOf = (subject: string) => refusal.allow(subject);
  const auditActions = async (targetId: string) =>
    (
      await context.deps.db
        .selectFrom('audit_log')
        .select('action')
        .where('target_id', '=', targetId)
        .orderBy('id')
        .execute()
    ).map((row) => row.action);
  const ledgerRows = async (accountId: string) =>
    (
      await context.deps.db
        .selectFrom('ledger_entries')
        .select('id')
        .where('account_id', '=', accountId)
        .execute()
    ).length;

  it('a credit grant whose audit row fails grants nothing', async () => {
    const customer = await member(context, 'credit');
    const grant = () =>
      admin.request('POST', `/admin/accounts/${customer.id}/grants`, {
        body: { credits: '100', note: 'goodwill' },
      });
    await refuseAuditOf(customer.id);
    const refused = await grant();
    expect(refused.status).toBe(500);
    expect(refused.body.code).toBe('server_error');
    expect(JSON.stringify(refused.body)).not.toContain('refused by the test');
    expect((await balancesOf(context.deps, customer.id)).credits).toBe(0n);
    expect(await ledgerRows(customer.id)).toBe(0);
    expect(await auditActions(customer.id)).toEqual([]);

    await allowAuditOf(customer.id);
    expect((await grant()).status).toBe(201);
    expect((await balancesOf(context.deps, customer.id)).credits).toBe(100n);
    expect(await auditActions(customer.id)).toEqual(['admin.grant']);
  });

  it('a package grant whose audit row fails grants no entitlement', async () => {
    const customer = await member(context, 'package');
    const grant = () =>
      admin.request('POST', `/admin/accounts/${customer.id}/grants`, {
        body: { packageId: 'small', note: 'goodwill' },
      });
    await refuseAuditOf(customer.id);
    expect((await grant()).status).toBe(500);
    const entitlements = () =>
      context.deps.db.selectFrom('entitlements').select('id').where('account_id', '=', customer.id).execute();
    expect(await entitlements()).toEqual([]);
    expect(await ledgerRows(customer.id)).toBe(0);

    await allowAuditOf(customer.id);
    expect((await grant()).status).toBe(201);
    expect(await entitlements()).toHaveLength(1);
    expect(await auditActions(customer.id)).toEqual(['admin.grant']);
  });

  it('a credit adjustment whose audit row fails leaves the balance as it was', async () => {
    const customer = await member(context, 'adjust');
    expect(
      (
        await admin.request('POST', `/admin/accounts/${customer.id}/grants`, {
          body: { credits: '500', note: 'start' },
        })
      ).status,
    ).toBe(201);
    const adjust = () =>
      admin.request('POST', `/admin/accounts/${customer.id}/credit-adjustments`, {
        body: { amount: '-200', note: 'correction' },
      });
    await refuseAuditOf(customer.id);
    expect((await adjust()).status).toBe(500);
    expect((await balancesOf(context.deps, customer.id)).credits).toBe(500n);
    expect(await ledgerRows(customer.id)).toBe(1);

    await allowAuditOf(customer.id);
    expect((await adjust()).status).toBe(201);
    expect((await balancesOf(context.deps, customer.id)).credits).toBe(300n);
    expect(await auditActions(customer.id)).toEqual(['admin.grant', 'admin.credit_adjustment']);
  });

  it('a suspension whose audit row fails leaves the account active', async () => {
    const customer = await member(context, 'suspend');
    const suspend = () =>
      admin.request('PATCH', `/admin/accounts/${customer.id}/status`, { body: { status: 'suspended' } });
    const status = async () =>
      (await admin.request('GET', `/admin/accounts/${customer.id}`)).body.data.status;
    await refuseAuditOf(customer.id);
    expect((await suspend()).status).toBe(500);
    expect(await status()).toBe('active');
    expect((await customer.request('GET', '/me')).status).toBe(200);

    await allowAuditOf(customer.id);
    expect((await suspend()).status).toBe(200);
    expect(await status()).toBe('suspended');
    expect(await auditActions(customer.id)).toEqual(['admin.account.suspend']);
  });
});
