import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  balancesOf,
  createFundedKey,
  ENGINES,
  expectLedgerConsistent,
  internalApi,
  reserveItem,
  seedCatalog,
  settleItem,
} from '../../../test/billing.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';

/**
 * Which upstream served a routed call (docs/routing.md) is written by the transaction that
 * settles the call, on both engines: an admin's route report never names a call the ledger
 * does not have, and a settlement costs one durable commit, routed or not.
 */
describe.each(ENGINES)('%s', (_engine, hotTier) => {
  let context: TestContext;
  let api: ReturnType<typeof internalApi>;

  beforeAll(async () => {
    context = await createTestContext(`finish-routes-${hotTier ? 'hot' : 'pg'}`, {}, { hotTier });
    await seedCatalog(context);
    api = internalApi(context);
  });
  afterEach(() => expectLedgerConsistent(context));
  afterAll(() => context.close());

  const route = { providerId: 'mock', upstreamModel: 'secret-upstream-model-a', attempts: 2 };

  async function routeOf(reservationId: string) {
    return context.deps.db
      .selectFrom('reservation_routes')
      .select(['provider_id', 'upstream_model', 'attempts'])
      .where('reservation_id', '=', reservationId)
      .executeTakeFirst();
  }

  async function statusOf(reservationId: string) {
    const row = await context.deps.db
      .selectFrom('reservations')
      .select('status')
      .where('id', '=', reservationId)
      .executeTakeFirst();
    return row?.status ?? null;
  }

  it('records the route with the settlement; a repeat records nothing more', async () => {
    const key = await createFundedKey(context, { credits: 10_000n });
    const item = reserveItem(key, 'priced', 10n, 10n);
    expect((await api.reserve([item])).body.results[0]).toMatchObject({ ok: true });
    const settle = { ...settleItem(key, item.reservationId, 'priced', 4n, 6n), route };
    const first = await api.finish([settle]);
    expect(first.body.results[0]).toMatchObject({
      status: 'settled',
      replay: false,
      charged: { credits: '38' },
    });
    expect(await routeOf(item.reservationId)).toEqual({
      provider_id: 'mock',
      upstream_model: 'secret-upstream-model-a',
      attempts: 2,
    });
    const again = await api.finish([{ ...settle, route: { ...route, attempts: 3 } }]);
    expect(again.body.results[0]).toMatchObject({
      status: 'settled',
      replay: true,
      charged: { credits: '38' },
    });
    expect(await routeOf(item.reservationId)).toMatchObject({ attempts: 2 });
  });

  it('leaves no route behind when the settlement fails to commit; sent again, both land once', async () => {
    const key = await createFundedKey(context, { credits: 10_000n });
    const item = reserveItem(key, 'priced', 10n, 10n);
    expect((await api.reserve([item])).body.results[0]).toMatchObject({ ok: true });
    // The settlement's ledger rows are refused for this one call: its transaction rolls back.
    const trigger = `refuse_${item.reservationId.replaceAll('-', '')}`;
    await sql
      .raw(
        `create function ${trigger}() returns trigger language plpgsql as $$ begin raise exception 'refused'; end $$;
         create trigger ${trigger} before insert on ledger_entries for each row
           when (new.reservation_id = '${item.reservationId}' and new.kind = 'settle') execute function ${trigger}()`,
      )
      .execute(context.deps.db);
    const settle = { ...settleItem(key, item.reservationId, 'priced', 4n, 6n), route };
    try {
      const failed = await api.finish([settle]);
      expect(failed.status).toBeGreaterThanOrEqual(500);
      expect(await routeOf(item.reservationId)).toBeUndefined();
      expect(await statusOf(item.reservationId)).not.toBe('settled');
    } finally {
      await sql
        .raw(`drop trigger ${trigger} on ledger_entries; drop function ${trigger}()`)
        .execute(context.deps.db);
    }
    // The gateway sends an unacknowledged batch again.
    const again = await api.finish([settle]);
    expect(again.body.results[0]).toMatchObject({ status: 'settled', charged: { credits: '38' } });
    expect(await routeOf(item.reservationId)).toMatchObject({ attempts: 2 });
    expect(await balancesOf(context, key.accountId)).toMatchObject({
      credits: 10_000n - 38n,
      reservedCredits: 0n,
    });
  });
});
