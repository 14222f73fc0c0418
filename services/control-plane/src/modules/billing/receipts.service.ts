import { AppError } from '@tollgate/errors';
import type { CallReceipt, ReceiptDraw } from '@tollgate/schemas';
import type { Dependencies } from '../../deps.ts';
import { findKeyByDigest } from '../api-keys/api-keys.service.ts';

/** The token parts a reservation row may record, as the receipt names them. */
const USAGE_COLUMNS: Record<string, string> = {
  input_tokens: 'inputTokens',
  output_tokens: 'outputTokens',
  cache_read_tokens: 'cacheReadTokens',
  cache_write_tokens: 'cacheWriteTokens',
  cache_write_1h_tokens: 'cacheWrite1hTokens',
};

/** A reservation leg as both engines store it: prices ride on the credit leg (`inputPrice`, ...). */
type Leg = { source: string } & Record<string, unknown>;

function pricesOf(legs: Leg[]): Record<string, string> | null {
  const credit = legs.find((leg) => leg.source === 'credit');
  if (!credit) return null;
  const prices: Record<string, string> = {};
  for (const [name, value] of Object.entries(credit)) {
    if (name.endsWith('Price') && typeof value === 'string') prices[name.slice(0, -'Price'.length)] = value;
  }
  return prices;
}

/** One call's receipt, for the key that made it (GET /v1/key/usage/{request_id}). */
export async function readReceipt(
  deps: Dependencies,
  keyDigest: string,
  requestId: string,
): Promise<CallReceipt> {
  const key = await findKeyByDigest(deps.db, deps.config.keyPepper, keyDigest, deps.clock.now());
  if (!key) throw new AppError('invalid_api_key');
  return readCallReceipt(deps, { accountId: key.accountId, keyId: key.keyId }, requestId);
}

/**
 * One call's receipt, within an account (and one key of it, when given): the reservation row
 * (alias, state, usage parts, totals, the prices fixed when it was reserved) and the ledger's
 * settle rows for it (what was drawn from which entitlement or the credit balance). A call of
 * another account or key, an unknown id and a call not yet written (in flight on the hot tier)
 * are all not_found.
 */
export async function readCallReceipt(
  deps: Dependencies,
  owner: { accountId: string; keyId?: string },
  requestId: string,
): Promise<CallReceipt> {
  let query = deps.db
    .selectFrom('reservations')
    .selectAll()
    .where('id', '=', requestId)
    .where('account_id', '=', owner.accountId);
  if (owner.keyId !== undefined) query = query.where('key_id', '=', owner.keyId);
  const row = await query.executeTakeFirst();
  if (!row) throw new AppError('not_found', { message: 'No call with that request id.' });
  const draws = await deps.db
    .selectFrom('ledger_entries as l')
    .leftJoin('entitlements as e', 'e.id', 'l.entitlement_id')
    .select(['l.entitlement_id', 'e.package_id', 'l.amount'])
    .where('l.reservation_id', '=', requestId)
    .where('l.account_id', '=', owner.accountId)
    .where('l.kind', '=', 'settle')
    .orderBy('l.id')
    .execute();
  const columns = row as unknown as Record<string, unknown>;
  const usage: Record<string, string> = {};
  for (const [column, name] of Object.entries(USAGE_COLUMNS)) {
    const value = columns[column];
    if (value !== null && value !== undefined) usage[name] = String(value);
  }
  return {
    requestId: row.id,
    keyId: row.key_id,
    alias: row.alias,
    surface: row.surface as CallReceipt['surface'],
    state: row.status,
    outcome: row.outcome,
    httpStatus: row.http_status,
    holdReason: row.hold_reason,
    usage: row.status === 'settled' ? usage : null,
    prices: pricesOf(row.legs as unknown as Leg[]),
    charged: { tokens: String(row.charged_tokens), credits: String(row.charged_credits) },
    writtenOff: { tokens: String(row.written_off_tokens), credits: String(row.written_off_credits) },
    drawn: draws
      .filter((draw) => BigInt(draw.amount) > 0n)
      .map(
        (draw): ReceiptDraw => ({
          source: draw.entitlement_id === null ? 'credit' : 'entitlement',
          entitlementId: draw.entitlement_id,
          packageId: draw.package_id ?? null,
          amount: String(draw.amount),
        }),
      ),
    createdAt: row.created_at.toISOString(),
    finishedAt: row.finished_at?.toISOString() ?? null,
  };
}
