import type { Dependencies } from '../../deps.ts';
import { pruneUsage } from '../spend-caps/spend-caps.repository.ts';
import { ROLLING_MS } from '../spend-caps/windows.ts';
import * as repository from './engine.repository.ts';
import { countOtherFinishes } from './engines.ts';

/** One reservation the pass changed, and why. */
export interface ReconciledReservation {
  id: string;
  accountId: string;
  alias: string;
  action: 'hold' | 'release';
  reason: 'settlement_missing' | 'hold_expired';
}

export interface ReconcileResult {
  /** Reservations nobody settled within the timeout, now held for review (never released unseen). */
  held: number;
  /** Holds nobody resolved within the hold timeout, now released. */
  released: number;
  reservations: ReconciledReservation[];
}

const BATCH = 200;

/**
 * Accounts for every reservation older than the reservation timeout: one whose settlement never
 * arrived (a gateway died, or its queue could not deliver) is held with reason
 * `settlement_missing`, so it shows in the held listing; a hold nobody resolved within the hold
 * timeout is released (`hold_expired`). A late settle still charges what was used (up to what is
 * left). With the hot tier, its pass over the leases does the same for calls in Redis (and writes
 * what a stopped control plane left unwritten, returns idle leases). Each change is in the result
 * and the log, none is silent.
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
  const changes = [
    ...stale.map((row) => ({ row, action: 'hold' as const, reason: 'settlement_missing' as const })),
    ...expiredHolds.map((row) => ({ row, action: 'release' as const, reason: 'hold_expired' as const })),
  ];
  if (changes.length > 0) {
    await repository.finishBatch(
      deps.prepared,
      changes.map(({ row, action, reason }) => repository.finishRowOf(row, action, reason, occurredAt)),
    );
  }
  // Spend caps reach back a month at most (docs/billing/spend-caps.md): older counts go, and
  // finished calls once past the rolling window (the calendar sums keep what they counted).
  await pruneUsage(
    deps.db,
    { callsBefore: new Date(now - ROLLING_MS), before: new Date(now - 32 * 86_400_000) },
    10_000,
  );
  // A released hold counts in no spend cap any more (a new hold keeps counting its estimate).
  await countOtherFinishes(
    deps,
    expiredHolds.map((row) => ({
      accountId: row.account_id,
      reservationId: row.id,
      status: 'released',
      parts: null,
    })),
  );
  const reservations: ReconciledReservation[] = changes.map(({ row, action, reason }) => ({
    id: row.id,
    accountId: row.account_id,
    alias: row.alias,
    action,
    reason,
  }));
  // The engine's own pass (the hot tier: over its leases); released holds may be drawn again.
  const swept = await deps.billing.reconcile(new Set(expiredHolds.map((row) => row.account_id)));
  for (const row of await repository.findReservations(deps.db, swept.held)) {
    reservations.push({
      id: row.id,
      accountId: row.account_id,
      alias: row.alias,
      action: 'hold',
      reason: 'settlement_missing',
    });
  }
  const held = reservations.filter((row) => row.action === 'hold').length;
  if (reservations.length > 0) {
    deps.logger.warn({ held, released: expiredHolds.length, reservations }, 'reconciled reservations');
  }
  return { held, released: expiredHolds.length, reservations };
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
