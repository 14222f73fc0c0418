import { randomUUID } from 'node:crypto';
import type { LimiterSettings, RenewSlotsResponse, ReserveItem } from '@tollgate/schemas';
import { limiterKeys } from '@tollgate/service-kit';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createFundedKey,
  endItem,
  expectLedgerConsistent,
  type FundedKey,
  reserveItem,
  settleItem,
} from '../../../../test/billing.ts';
import type { TestContext } from '../../../../test/context.ts';
import { closeHotTierFixture, createHotTierFixture, type HotTierFixture } from '../../../../test/hot-tier.ts';

/**
 * The hot tier owns a call's concurrency slot (docs/decisions/one-owner-of-the-slot.md): it takes
 * it with the reservation, frees it with the call's finish (whichever gateway, or a restarted one,
 * sends it), and keeps it while a gateway says the call still runs. Time moves by the test clock,
 * which the scripts' clock (Redis TIME) follows.
 */

let context: TestContext;
let api: HotTierFixture['api'];
let redis: Redis;
const LEASE_TTL_MS = 3_000;
const limiter: LimiterSettings = {
  prefix: `slots-${randomUUID()}:`,
  windowMs: 3_600_000,
  leaseTtlMs: LEASE_TTL_MS,
};

beforeAll(async () => {
  ({ context, api, redis } = await createHotTierFixture('hot-slots'));
});
afterEach(() => expectLedgerConsistent(context));
afterAll(() => closeHotTierFixture({ context, redis }));

/** A call of `key` at one slot for the key and one for its package. */
function limitedCall(key: FundedKey, planId: string): ReserveItem {
  return {
    ...reserveItem(key, 'priced', 10n, 10n),
    limits: {
      keyRequestsPerMinute: 1_000,
      keyConcurrency: 1,
      plan: { id: planId, requestsPerMinute: null, concurrency: 1 },
    },
  };
}

async function reserve(item: ReserveItem) {
  const response = await api.reserve([item], limiter);
  return response.body.results[0]!;
}

function renew(...items: ReserveItem[]) {
  return api.call<RenewSlotsResponse>('/reservations/slots', {
    leaseTtlMs: LEASE_TTL_MS,
    items: items.map(({ reservationId, accountId }) => ({ reservationId, accountId })),
  });
}

/** Who holds the key's and the package's slots, as Redis has them. */
async function holders(key: FundedKey, planId: string) {
  const sets = limiterKeys(limiter.prefix, key.keyId, planId, key.accountId);
  return {
    key: await redis.zrange(sets.keyLeases, '0', '-1'),
    plan: await redis.zrange(sets.planLeases, '0', '-1'),
  };
}

describe('the concurrency slot of a hot-tier call', () => {
  it('is taken with the reservation and freed by its finish: the next call at the ceiling is admitted at once', async () => {
    const key = await createFundedKey(context, { credits: 10_000n });
    const planId = `${key.accountId}:package`;
    const first = limitedCall(key, planId);
    expect(await reserve(first)).toMatchObject({ ok: true, limited: true });
    expect(await holders(key, planId)).toEqual({ key: [first.reservationId], plan: [first.reservationId] });
    expect(await reserve(limitedCall(key, planId))).toMatchObject({
      ok: false,
      code: 'concurrency_limit_exceeded',
    });

    // The finish alone frees both slots: no gateway releases them.
    const settled = await api.finish([settleItem(key, first.reservationId, 'priced', 5n, 5n)]);
    expect(settled.body.results[0]).toMatchObject({ status: 'settled' });
    expect(await holders(key, planId)).toEqual({ key: [], plan: [] });
    const next = limitedCall(key, planId);
    expect(await reserve(next)).toMatchObject({ ok: true });

    // A release (an upstream failure, a client gone) frees it the same way.
    await api.finish([endItem(key, next.reservationId, 'priced', 'release', 'upstream_unavailable')]);
    expect(await holders(key, planId)).toEqual({ key: [], plan: [] });
  });

  it('is kept past its lease while a gateway renews it, and expires once renewals stop (a gateway killed)', async () => {
    const key = await createFundedKey(context, { credits: 10_000n });
    const planId = `${key.accountId}:package`;
    const stream = limitedCall(key, planId);
    expect(await reserve(stream)).toMatchObject({ ok: true });
    for (let round = 0; round < 3; round += 1) {
      context.clock.advance(LEASE_TTL_MS / 2);
      expect((await renew(stream)).body).toEqual({ renewed: 1 });
    }
    // 1.5 lease lifetimes after it was taken, the running call still holds it.
    context.clock.advance(LEASE_TTL_MS / 2);
    expect(await reserve(limitedCall(key, planId))).toMatchObject({
      ok: false,
      code: 'concurrency_limit_exceeded',
    });
    // Its gateway died: nobody renews it, and one lease later the slot is free again.
    context.clock.advance(LEASE_TTL_MS);
    const after = limitedCall(key, planId);
    expect(await reserve(after)).toMatchObject({ ok: true });
    expect(await holders(key, planId)).toEqual({ key: [after.reservationId], plan: [after.reservationId] });
    await api.finish([settleItem(key, after.reservationId, 'priced', 5n, 5n)]);
    // The dead gateway's reservation is the reconciler's (held as settlement_missing), not the slot's.
    await api.finish([endItem(key, stream.reservationId, 'priced', 'release', 'gateway_error')]);
  });

  it('is never taken back nor freed twice by a gateway restarted with old finishes and renewals', async () => {
    const key = await createFundedKey(context, { credits: 10_000n });
    const planId = `${key.accountId}:package`;
    const old = limitedCall(key, planId);
    expect(await reserve(old)).toMatchObject({ ok: true });
    const finish = settleItem(key, old.reservationId, 'priced', 5n, 5n);
    await api.finish([finish]);
    // The old process's last renewal arrives after the finish: it renews nothing.
    expect((await renew(old)).body).toEqual({ renewed: 0 });
    const running = limitedCall(key, planId);
    expect(await reserve(running)).toMatchObject({ ok: true });
    // The restarted gateway delivers the old finish again from its pending store: a replay, which
    // leaves the running call's slot where it is.
    const replay = await api.finish([finish]);
    expect(replay.body.results[0]).toMatchObject({ status: 'settled', replay: true });
    expect(await holders(key, planId)).toEqual({
      key: [running.reservationId],
      plan: [running.reservationId],
    });
    expect(await reserve(limitedCall(key, planId))).toMatchObject({
      ok: false,
      code: 'concurrency_limit_exceeded',
    });
    await api.finish([settleItem(key, running.reservationId, 'priced', 5n, 5n)]);
    expect(await holders(key, planId)).toEqual({ key: [], plan: [] });
  });
});
