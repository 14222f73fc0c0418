import { AppError } from '@tollgate/errors';
import type { Dependencies } from '../../deps.ts';
import { type Actor, recordAudit, recordServiceAudit } from '../audit/audit.service.ts';
import type { ReservationStatus } from './billing.table.ts';
import * as repository from './engine.repository.ts';
import { changeBalances, countOtherFinishes } from './engines.ts';

export interface HeldReservation {
  id: string;
  accountId: string;
  keyId: string;
  alias: string;
  surface: string;
  reason: string | null;
  reserved: { tokens: string; credits: string };
  createdAt: string;
  heldAt: string | null;
}

/** Reservations held for reconciliation (usage unknown), oldest first. */
export async function listHeld(deps: Dependencies, limit: number): Promise<HeldReservation[]> {
  const rows = await repository.listHeldReservations(deps.db, limit);
  return rows.map((row) => ({
    id: row.id,
    accountId: row.account_id,
    keyId: row.key_id,
    alias: row.alias,
    surface: row.surface,
    reason: row.hold_reason,
    reserved: { tokens: String(row.reserved_tokens), credits: String(row.reserved_credits) },
    createdAt: row.created_at.toISOString(),
    heldAt: row.finished_at?.toISOString() ?? null,
  }));
}

export type Resolution =
  | {
      action: 'settle';
      /** Input outside any cache, and the cache parts (docs/pricing.md); absent parts are zero. */
      inputTokens: bigint;
      outputTokens: bigint;
      cacheReadTokens?: bigint;
      cacheWriteTokens?: bigint;
      cacheWrite1hTokens?: bigint;
      /** The admin's reason, kept in the audit row. */
      note?: string;
    }
  | { action: 'release'; note?: string };

/**
 * An admin resolves a hold: settle the usage learned elsewhere (e.g. the provider's usage report)
 * or release the reservation. Same idempotent path as the gateway's settle and release; audited
 * in the same transaction (without an admin, as the service's).
 */
export async function resolveHold(
  deps: Dependencies,
  reservationId: string,
  resolution: Resolution,
  actor?: Actor,
): Promise<{ status: ReservationStatus; charged: { tokens: string; credits: string } }> {
  const row = await repository.findReservation(deps.db, reservationId);
  if (row?.status !== 'held')
    throw new AppError('not_found', { message: 'No held reservation with this id.' });
  // Under the account's lock, the hot tier's lease recalled first: a settle may draw beyond the
  // reservation from what the lease holds free (R10), and what a release returns is drawn again
  // by the next call (the recall marks the lease to top up).
  const [result] = await changeBalances(deps, async ({ trx, lock }) => {
    await lock(row.account_id);
    const audit = {
      action: 'admin.reservation.resolve',
      targetType: 'reservation',
      targetId: reservationId,
      detail: {
        ...resolution,
        accountId: row.account_id,
        reserved: { tokens: String(row.reserved_tokens), credits: String(row.reserved_credits) },
      },
    };
    await (actor ? recordAudit(trx, actor, audit) : recordServiceAudit(trx, audit));
    return repository.finishBatchIn(trx, [
      {
        ...repository.finishRowOf(
          row,
          resolution.action,
          resolution.action === 'settle' ? 'ok' : 'released_by_admin',
          new Date().toISOString(),
        ),
        ...(resolution.action === 'settle'
          ? {
              input_tokens: String(resolution.inputTokens),
              output_tokens: String(resolution.outputTokens),
              cache_read_tokens: String(resolution.cacheReadTokens ?? 0n),
              cache_write_tokens: String(resolution.cacheWriteTokens ?? 0n),
              cache_write_1h_tokens: String(resolution.cacheWrite1hTokens ?? 0n),
            }
          : {}),
      },
    ]);
  });
  await countOtherFinishes(deps, [
    {
      accountId: row.account_id,
      reservationId,
      status: result!.status,
      parts:
        resolution.action === 'settle'
          ? [
              resolution.inputTokens,
              resolution.outputTokens,
              resolution.cacheReadTokens ?? 0n,
              resolution.cacheWriteTokens ?? 0n,
              resolution.cacheWrite1hTokens ?? 0n,
            ]
          : null,
    },
  ]);
  return {
    status: result!.status,
    charged: { tokens: result!.charged_tokens, credits: result!.charged_credits },
  };
}
