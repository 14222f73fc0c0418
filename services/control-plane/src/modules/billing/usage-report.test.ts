/**
 * Usage by day, key and customer: days in each account's timezone (the rollup's and the live
 * part's alike, and counted again when the timezone changes), and the operator's report across
 * customers (GET /admin/reports/usage). Integer credits throughout.
 */
import { randomUUID } from 'node:crypto';
import type { FinishItem } from '@tollgate/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createFundedKey,
  type FundedKey,
  internalApi,
  seedCatalog,
  settleItem,
} from '../../../test/billing.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { type Member, member } from '../../../test/resellers.ts';
import { setCapTimeZone } from '../spend-caps/spend-caps.service.ts';
import { summarizeUsage } from './reports.service.ts';
import { advanceUsageRollupOnce } from './usage-rollup.ts';

const DAY = 86_400_000;
const startOfToday = () => {
  const now = new Date();
  return Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
};
/** The UTC day `offset` days before today. */
const isoDay = (offset: number) => new Date(startOfToday() - offset * DAY).toISOString().slice(0, 10);

let context: TestContext;
let admin: Member;
let api: ReturnType<typeof internalApi>;

beforeAll(async () => {
  context = await createTestContext('usage-report', { USAGE_ROLLUP_LAG_SECONDS: '0' });
  await seedCatalog(context);
  admin = await member(context, 'usage-admin', { admin: true });
  api = internalApi(context);
});
afterAll(async () => {
  await context.publicApp.mailer.drain();
  await context.close();
});

/** A priced call made at noon UTC `daysAgo` days back: 2 credits per input token, 5 per output. */
async function callAtNoon(key: FundedKey, daysAgo: number, input: bigint, output: bigint) {
  const item: FinishItem = {
    ...settleItem(key, randomUUID(), 'priced', input, output),
    occurredAt: new Date(startOfToday() - daysAgo * DAY + 12 * 3_600_000).toISOString(),
  };
  expect((await api.finish([item])).body.results[0]?.status).toBe('settled');
}

const days = (rows: { day: string | null; charged: { credits: string } }[]) =>
  rows.map((row) => [row.day, row.charged.credits]);

describe('usage by day, key and customer', () => {
  it('counts days in the account’s timezone, and again when it changes; the operator sees every customer', async () => {
    // Kiritimati is UTC+14: noon UTC is 02:00 the next day there.
    const east = await createFundedKey(context, { credits: 1_000_000n });
    await setCapTimeZone(context.deps, east.accountId, 'Pacific/Kiritimati');
    const west = await createFundedKey(context, { credits: 1_000_000n });
    await callAtNoon(east, 2, 10n, 10n); // 70 credits, east's day isoDay(1)
    await callAtNoon(west, 2, 100n, 100n); // 700 credits, isoDay(2)
    await advanceUsageRollupOnce(context.deps);
    await callAtNoon(east, 3, 1n, 1n); // 7 credits, east's isoDay(2), settled after the pass
    const range = { from: isoDay(5), to: isoDay(0) };

    const own = await summarizeUsage(context.deps, east.accountId, range, 'key');
    expect(own.map((row) => [row.day, row.keyId, row.charged.credits])).toEqual([
      [isoDay(2), east.keyId, '7'],
      [isoDay(1), east.keyId, '70'],
    ]);

    const report = async (query: string) => {
      const answer = await admin.request(
        'GET',
        `/admin/reports/usage?from=${range.from}&to=${range.to}&${query}`,
      );
      expect(answer.status).toBe(200);
      return answer.body.data.items;
    };
    expect(days(await report(`by=day&accountId=${east.accountId}`))).toEqual([
      [isoDay(2), '7'],
      [isoDay(1), '70'],
    ]);
    // Across customers, each on its own days.
    expect(days(await report('by=day'))).toEqual([
      [isoDay(2), '707'],
      [isoDay(1), '70'],
    ]);
    const customers = await report('by=account');
    expect(customers).toEqual([
      expect.objectContaining({
        accountId: west.accountId,
        email: west.email,
        requests: '1',
        inputTokens: '100',
        outputTokens: '100',
        charged: { tokens: '0', credits: '700' },
      }),
      expect.objectContaining({
        accountId: east.accountId,
        requests: '2',
        charged: { tokens: '0', credits: '77' },
      }),
    ]);
    expect(await report(`by=key&accountId=${east.accountId}`)).toEqual([
      expect.objectContaining({
        keyId: east.keyId,
        keyName: 'test',
        charged: { tokens: '0', credits: '77' },
      }),
    ]);
    const noAccount = await admin.request('GET', '/admin/reports/usage?by=key');
    expect(noAccount.status).toBe(422);

    // Back to UTC: the rolled-up call moves to its UTC day, as the live one does.
    await setCapTimeZone(context.deps, east.accountId, 'UTC');
    expect(days(await summarizeUsage(context.deps, east.accountId, range, 'alias'))).toEqual([
      [isoDay(3), '7'],
      [isoDay(2), '70'],
    ]);
    await advanceUsageRollupOnce(context.deps);
    expect(days(await report(`by=day&accountId=${east.accountId}`))).toEqual([
      [isoDay(3), '7'],
      [isoDay(2), '70'],
    ]);
  });

  it('is for admins only', async () => {
    const customer = await member(context, 'usage-customer');
    expect((await customer.request('GET', '/admin/reports/usage')).status).toBe(403);
  });
});
