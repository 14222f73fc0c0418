import { AppError } from '@tollgate/errors';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';

/** One ledger row as an operator reads it (integer strings; entitlementId null = credit). */
export interface LedgerItem {
  id: string;
  kind: string;
  entitlementId: string | null;
  availableDelta: string;
  reservedDelta: string;
  amount: string;
  reservationId: string | null;
  cause: string;
  createdAt: string;
}

/** Read-only: an account's ledger rows, newest first, paged by row id. */
export async function listLedger(
  db: Kysely<Database>,
  accountId: string,
  query: { limit: number; cursor?: string },
): Promise<{ items: LedgerItem[]; nextCursor: string | null }> {
  if (query.cursor !== undefined && !/^[1-9][0-9]{0,17}$/.test(query.cursor))
    throw AppError.validation({ cursor: ['Use nextCursor of the previous page.'] });
  const rows = await db
    .selectFrom('ledger_entries')
    .selectAll()
    .where('account_id', '=', accountId)
    .$if(query.cursor !== undefined, (q) => q.where('id', '<', BigInt(query.cursor as string)))
    .orderBy('id', 'desc')
    .limit(query.limit + 1)
    .execute();
  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  return {
    items: page.map((row) => ({
      id: String(row.id),
      kind: row.kind,
      entitlementId: row.entitlement_id,
      availableDelta: String(row.available_delta),
      reservedDelta: String(row.reserved_delta),
      amount: String(row.amount),
      reservationId: row.reservation_id,
      cause: row.cause,
      createdAt: row.created_at.toISOString(),
    })),
    nextCursor: rows.length > query.limit && last ? String(last.id) : null,
  };
}
