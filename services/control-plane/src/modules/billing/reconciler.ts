import type { Dependencies } from '../../deps.ts';
import * as repository from './billing.repository.ts';

export interface ReconcileResult {
  released: number;
  holdsExpired: number;
}

const BATCH = 200;

/**
 * Releases reservations nobody settled within the reservation timeout (a gateway died or lost
 * its connection) and holds nobody resolved within the hold timeout, so no balance stays pinned.
 * A late settle still charges what was used (up to what is left).
 */
export async function reconcileOnce(deps: Dependencies): Promise<ReconcileResult> {
  const now = deps.clock.now().getTime();
  const { reservationTimeoutMs, holdTimeoutMs } = deps.config.billing;
  const stale = await repository.listStaleReservations(
    deps.db,
    'reserved',
    new Date(now - reservationTimeoutMs),
    BATCH,
  );
  const expiredHolds = await repository.listStaleReservations(
    deps.db,
    'held',
    new Date(now - holdTimeoutMs),
    BATCH,
  );
  const occurredAt = new Date(now).toISOString();
  const rows = [
    ...stale.map((row) => ({ row, outcome: 'reservation_timeout' })),
    ...expiredHolds.map((row) => ({ row, outcome: 'hold_expired' })),
  ].map(({ row, outcome }) => repository.finishRowOf(row, 'release', outcome, occurredAt));
  if (rows.length > 0) {
    await repository.finishBatch(deps.prepared, rows);
    deps.logger.info(
      { released: stale.length, holdsExpired: expiredHolds.length },
      'reconciled reservations',
    );
  }
  return { released: stale.length, holdsExpired: expiredHolds.length };
}

/** Runs reconcileOnce every interval until stopped; a failed pass is logged and retried. */
export function startReconciler(deps: Dependencies): { stop(): void } {
  const timer = setInterval(() => {
    reconcileOnce(deps).catch((error: unknown) =>
      deps.logger.error({ err: error }, 'reconciler pass failed'),
    );
  }, deps.config.billing.reconcileIntervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
