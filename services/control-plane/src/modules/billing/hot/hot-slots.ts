import type { RenewSlotsRequest, RenewSlotsResponse } from '@tollgate/schemas';
import type { HotStore } from './hot-store.ts';

/**
 * Renews the concurrency slots of calls a gateway still runs (lua/slots.lua), one script per
 * account. The hot tier owns each slot: reserve.lua takes it, finish.lua and sweep.lua free it.
 */
export async function renewSlots(store: HotStore, request: RenewSlotsRequest): Promise<RenewSlotsResponse> {
  const byAccount = new Map<string, string[]>();
  for (const { reservationId, accountId } of request.items) {
    const ids = byAccount.get(accountId);
    if (ids) ids.push(reservationId);
    else byAccount.set(accountId, [reservationId]);
  }
  const counts = await Promise.all(
    [...byAccount].map(([accountId, ids]) =>
      store.run('hotSlots', {
        keys: { calls: store.keysOf(accountId).calls },
        args: { ttlMs: request.leaseTtlMs },
        items: ids.map((id) => ({ keys: {}, args: { id } })),
      }),
    ),
  );
  return { renewed: counts.reduce((sum, count) => sum + count, 0) };
}
