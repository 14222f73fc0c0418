/**
 * The operator's list of accounts with balance, spend and last call (GET /admin/account-summaries):
 * figures as the account's own views give them, spend from the rollup plus the calls settled since
 * its watermark, over a chosen number of days, searchable by email and paged like /admin/accounts.
 */
import { randomUUID } from 'node:crypto';
import type { FinishItem } from '@tollgate/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createFundedKey,
  ENGINES,
  type FundedKey,
  grantEntitlement,
  internalApi,
  reserveItem,
  seedCatalog,
  settleItem,
} from '../../../test/billing.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { type Member, member } from '../../../test/resellers.ts';
import { advanceUsageRollupOnce } from '../billing/usage-rollup.ts';

const DAY = 86_400_000;

/** A settle the gateway reports for a call the control plane never saw, made `daysAgo` days ago. */
function pastSettle(key: FundedKey, daysAgo: number, input: bigint, output: bigint): FinishItem {
  return {
    ...settleItem(key, randomUUID(), 'priced', input, output),
    occurredAt: new Date(Date.now() - daysAgo * DAY).toISOString(),
  };
}

describe.each(ENGINES)('account summaries (%s)', (_name, hotTier) => {
  let context: TestContext;
  let admin: Member;
  let api: ReturnType<typeof internalApi>;

  beforeAll(async () => {
    // No lag: a pass rolls up everything settled before it.
    context = await createTestContext(
      `account-summaries-${hotTier ? 'hot' : 'pg'}`,
      {
        USAGE_ROLLUP_LAG_SECONDS: '0',
      },
      { hotTier },
    );
    await seedCatalog(context);
    admin = await member(context, 'summaries-admin', { admin: true });
    api = internalApi(context);
  });
  afterAll(async () => {
    await context.publicApp.mailer.drain();
    await context.close();
  });

  async function summaries(query: string) {
    const answer = await admin.request('GET', `/admin/account-summaries?${query}`);
    expect(answer.status).toBe(200);
    return answer.body.data as {
      items: {
        account: { id: string; email: string };
        balance: unknown;
        spent: { since: string; requests: string; credits: string; tokens: string };
        lastCallAt: string | null;
      }[];
      nextCursor: string | null;
    };
  }

  it('shows each account’s balance, what it spent in the period and its last call, searched by email', async () => {
    const spender = await createFundedKey(context, { credits: 1_000_000n });
    // Tokens only for another alias: the priced calls below pay in credit.
    await grantEntitlement(context, spender.accountId, { tokens: 7_300n, aliases: ['tokens-only'] });
    const idle = await createFundedKey(context, { credits: 5_000n });

    // 40 days ago (700 credits) and today (230), rolled up; 3 days ago (70), settled after the pass.
    await api.finish([pastSettle(spender, 40, 100n, 100n)]);
    const today = reserveItem(spender, 'priced', 40n, 30n);
    expect((await api.reserve([today])).body.results[0]?.ok).toBe(true);
    expect(
      (await api.finish([settleItem(spender, today.reservationId, 'priced', 40n, 30n)])).body.results[0]
        ?.status,
    ).toBe('settled');
    await advanceUsageRollupOnce(context.deps);
    await api.finish([pastSettle(spender, 3, 10n, 10n)]);

    const found = await summaries(`email=${spender.email.toUpperCase()}`);
    expect(found.items.map((item) => item.account.id)).toEqual([spender.accountId]);
    const [row] = found.items;
    const since = new Date(Date.now() - 29 * DAY).toISOString().slice(0, 10);
    expect(row!.spent).toEqual({ since, requests: '2', credits: '300', tokens: '0' });
    expect(row!.balance).toEqual({
      remaining: { tokens: '7300', credits: String(1_000_000 - 1_000) },
      reserved: { tokens: '0', credits: '0' },
    });
    // The same balance the account's own page shows.
    const own = await admin.request('GET', `/admin/accounts/${spender.accountId}/balance`);
    expect(row!.balance).toEqual(own.body.data);
    expect(Date.now() - Date.parse(row!.lastCallAt!)).toBeLessThan(60_000);

    // A longer period takes in the older call.
    const longer = (await summaries(`email=${spender.email}&days=60`)).items[0]!;
    expect(longer.spent).toMatchObject({ requests: '3', credits: '1000' });

    const quiet = (await summaries(`email=${idle.email}`)).items[0]!;
    expect(quiet.spent).toMatchObject({ requests: '0', credits: '0', tokens: '0' });
    expect(quiet.lastCallAt).toBeNull();
    expect(quiet.balance).toMatchObject({ remaining: { tokens: '0', credits: '5000' } });
  });

  it('counts a call in flight as reserved, as the account’s own balance does', async () => {
    const key = await createFundedKey(context, { credits: 100_000n });
    const item = reserveItem(key, 'priced', 100n, 100n);
    expect((await api.reserve([item])).body.results[0]?.ok).toBe(true);
    const row = (await summaries(`email=${key.email}`)).items[0]!;
    const own = await admin.request('GET', `/admin/accounts/${key.accountId}/balance`);
    expect(row.balance).toEqual(own.body.data);
    expect(row.balance).toMatchObject({ reserved: { credits: '700' } });
    await api.finish([settleItem(key, item.reservationId, 'priced', 1n, 1n)]);
  });

  it('pages newest first through nextCursor, like the accounts list', async () => {
    const tag = randomUUID().slice(0, 8);
    const ids: string[] = [];
    for (let index = 0; index < 3; index++) {
      ids.push((await member(context, `page-${tag}`)).id);
    }
    const first = await summaries(`email=page-${tag}&limit=2`);
    expect(first.items).toHaveLength(2);
    expect(first.nextCursor).not.toBeNull();
    const second = await summaries(`email=page-${tag}&limit=2&after=${first.nextCursor}`);
    expect([...first.items, ...second.items].map((item) => item.account.id)).toEqual([...ids].reverse());
    expect(second.nextCursor).toBeNull();
  });

  it('is for admins only, and refuses a period beyond a year', async () => {
    const customer = await member(context, 'summaries-customer');
    expect((await customer.request('GET', '/admin/account-summaries')).status).toBe(403);
    expect((await admin.request('GET', '/admin/account-summaries?days=367')).status).toBe(422);
    expect((await admin.request('GET', '/admin/account-summaries?days=0')).status).toBe(422);
  });
});
