import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  balancesOf,
  createFundedKey,
  expectLedgerConsistent,
  internalApi,
  reserveItem,
  seedCatalog,
  settleItem,
} from '../../../test/billing.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';

let context: TestContext;
let api: ReturnType<typeof internalApi>;

beforeAll(async () => {
  context = await createTestContext('billing-flush');
  await seedCatalog(context);
  api = internalApi(context);
});
afterEach(() => expectLedgerConsistent(context));
afterAll(() => context.close());

const pending = Symbol('pending');

/** What the promise settled to within `ms`, or `pending`. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof pending> {
  return Promise.race([
    promise,
    // Real time: "not acknowledged within ms" is what is asserted, the flush being held back.
    new Promise<typeof pending>((resolve) => setTimeout(() => resolve(pending), ms)),
  ]);
}

describe('a settlement batch waiting for its disk flush', () => {
  it('is acknowledged only once durable, while reservations of the same account go on', async () => {
    // Priced alias: 2 per input token, 5 per output token.
    const key = await createFundedKey(context, { credits: 10_000n });
    const first = reserveItem(key, 'priced', 100n, 100n);
    expect((await api.reserve([first])).body.results[0]).toMatchObject({ ok: true });

    // Stand in for a slow disk: hold every durability mark, so the batch's final step waits.
    const blocker = new pg.Client({ connectionString: context.databaseUrl });
    await blocker.connect();
    try {
      await blocker.query('begin');
      await blocker.query('select slot from billing_flush_marks for update');

      const settling = api.finish([settleItem(key, first.reservationId, 'priced', 100n, 20n)]);
      // Not acknowledged: the gateway keeps the settlement until it is durable.
      expect(await within(settling, 500)).toBe(pending);

      // The settlement's own changes are committed and its lock on the balance is gone: a new
      // reservation of the same account is answered, and sees the settled balance.
      const second = reserveItem(key, 'priced', 100n, 100n);
      const reserved = await within(api.reserve([second]), 5_000);
      expect(reserved).not.toBe(pending);
      expect((reserved as Awaited<ReturnType<typeof api.reserve>>).body.results[0]).toMatchObject({
        ok: true,
      });
      expect(await balancesOf(context, key.accountId)).toMatchObject({
        // 10,000 - 300 charged (100 x 2 + 20 x 5) - 700 reserved by the second call.
        credits: 9_000n,
        reservedCredits: 700n,
      });
      expect(await within(settling, 200)).toBe(pending);

      await blocker.query('commit');
      const settled = await settling;
      expect(settled.status).toBe(200);
      expect(settled.body.results[0]).toMatchObject({
        status: 'settled',
        replay: false,
        charged: { tokens: '0', credits: '300' },
      });

      // Delivered again (the gateway retries what it could not confirm): charged once.
      const again = await api.finish([settleItem(key, first.reservationId, 'priced', 100n, 20n)]);
      expect(again.body.results[0]).toMatchObject({ status: 'settled', replay: true });
      await api.finish([settleItem(key, second.reservationId, 'priced', 100n, 100n)]);
      expect(await balancesOf(context, key.accountId)).toMatchObject({
        credits: 9_000n,
        reservedCredits: 0n,
      });
    } finally {
      await blocker.query('rollback').catch(() => {});
      await blocker.end();
    }
  });
});

describe('a finish batch larger than one transaction', () => {
  it('settles every item once, in order, and a repeat of the batch changes nothing', async () => {
    const key = await createFundedKey(context, { credits: 1_000_000n });
    const items = Array.from({ length: 41 }, () => reserveItem(key, 'priced', 10n, 10n));
    const reserved = await api.reserve(items);
    expect(reserved.body.results.every((result) => result.ok)).toBe(true);
    // Each call reserved 10 x 2 + 10 x 5 = 70 and used 10 input + 4 output tokens = 40.
    const settles = items.map((item) => settleItem(key, item.reservationId, 'priced', 10n, 4n));

    const first = await api.finish(settles);
    expect(first.status).toBe(200);
    expect(first.body.results.map((result) => result.reservationId)).toEqual(
      items.map((item) => item.reservationId),
    );
    expect(first.body.results.every((result) => result.status === 'settled' && !result.replay)).toBe(true);
    expect(await balancesOf(context, key.accountId)).toMatchObject({
      credits: 1_000_000n - 41n * 40n,
      reservedCredits: 0n,
    });

    const again = await api.finish(settles);
    expect(again.body.results.every((result) => result.status === 'settled' && result.replay)).toBe(true);
    expect(await balancesOf(context, key.accountId)).toMatchObject({ credits: 1_000_000n - 41n * 40n });
  });
});
