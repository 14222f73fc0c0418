import type { ReserveResult } from '@tollgate/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createFundedKey,
  ENGINES,
  type FundedKey,
  internalApi,
  reserveItem,
  seedCatalog,
  settleItem,
} from '../../../test/billing.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { setSpendCap } from './spend-caps.service.ts';
import { capWindow } from './windows.ts';

// The figures of docs/decisions/spend-caps.md, not a check: median latency of one reservation and
// one settlement through the internal API, one after another, per engine and account. Run on
// purpose only (CAPS_MEASURE=1); it prints a table and asserts nothing about speed.
const RUNS = 300;
const COUNTED = 2000;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};

describe.runIf(process.env.CAPS_MEASURE)('spend cap latency', () => {
  const rows: string[] = [];
  afterAll(() => {
    console.log(['| engine | account | reserve | settle |', '|---|---|---|---|', ...rows].join('\n'));
  });

  describe.each(ENGINES)('%s', (label, hotTier) => {
    let context: TestContext;
    let api: ReturnType<typeof internalApi>;
    beforeAll(async () => {
      context = await createTestContext(`caplat-${label.replace(' ', '-')}`, {}, { hotTier });
      await seedCatalog(context);
      api = internalApi(context);
      // An hour into a UTC day: every call below falls in one day.
      const day = capWindow('day', 'UTC', context.clock.now().getTime());
      context.clock.advance((day.end as number) + 3_600_000 - context.clock.now().getTime());
    }, 60_000);
    afterAll(async () => {
      await context.close();
    });

    async function capped(periods: Array<'5h' | 'day' | 'month'>): Promise<FundedKey> {
      const key = await createFundedKey(context, { credits: 10n ** 12n });
      for (const period of periods) {
        await setSpendCap(
          context.deps,
          { accountId: key.accountId, ip: null, userAgent: null },
          'customer',
          { accountId: key.accountId, keyId: null },
          { unit: 'credits', period, limit: 10n ** 15n },
        );
      }
      return key;
    }
    async function count(key: FundedKey, calls: number): Promise<void> {
      for (let done = 0; done < calls; done += 200) {
        const items = Array.from({ length: 200 }, () => reserveItem(key, 'priced', 10n, 20n));
        await api.reserve(items);
        await api.finish(items.map((item) => settleItem(key, item.reservationId, 'priced', 10n, 20n)));
      }
    }
    async function measure(name: string, key: FundedKey): Promise<void> {
      const reserve: number[] = [];
      const settle: number[] = [];
      for (let run = 0; run < RUNS; run += 1) {
        const item = reserveItem(key, 'priced', 10n, 20n);
        let started = performance.now();
        const reserved = await api.reserve([item]);
        reserve.push(performance.now() - started);
        expect((reserved.body.results[0] as ReserveResult).ok).toBe(true);
        started = performance.now();
        await api.finish([settleItem(key, item.reservationId, 'priced', 10n, 20n)]);
        settle.push(performance.now() - started);
      }
      rows.push(
        `| ${label} | ${name} | ${median(reserve).toFixed(1)} ms | ${median(settle).toFixed(1)} ms |`,
      );
    }

    it('measures', async () => {
      await measure('no caps', await createFundedKey(context, { credits: 10n ** 12n }));
      await measure('capped', await capped(['5h', 'day', 'month']));
      const recent = await capped(['5h', 'day', 'month']);
      await count(recent, COUNTED);
      await measure('capped, 2,000 calls in the last 5 hours', recent);
      const earlier = await capped(['5h', 'day', 'month']);
      await count(earlier, COUNTED);
      context.clock.advance(6 * 3_600_000);
      await measure('capped, 2,000 calls earlier the same day', earlier);
      const calendar = await capped(['day', 'month']);
      await count(calendar, COUNTED);
      await measure('day and month caps only, 2,000 calls in the windows', calendar);
    }, 900_000);
  });
});
