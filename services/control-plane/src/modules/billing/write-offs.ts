import { AppError } from '@tollgate/errors';
import type { Amounts } from '@tollgate/schemas';
import type { Dependencies } from '../../deps.ts';
import * as repository from './reports.repository.ts';

const DAY_MS = 86_400_000;
/** Without `from`/`to` the report covers the last 30 days. */
const DEFAULT_RANGE_DAYS = 30;

export interface WriteOffRow {
  accountId: string;
  alias: string;
  /** Finished reservations of this account and alias that wrote something off. */
  reservations: string;
  writtenOff: Amounts;
}

/**
 * What usage beyond a reservation could not be charged (the balance was spent), by account and
 * alias, largest first: where estimates fall short, for the operator to act on.
 */
export async function reportWriteOffs(
  deps: Dependencies,
  query: { from?: Date; to?: Date; limit: number },
): Promise<{ from: string; to: string; items: WriteOffRow[] }> {
  const to = query.to ?? deps.clock.now();
  const from = query.from ?? new Date(to.getTime() - DEFAULT_RANGE_DAYS * DAY_MS);
  if (from.getTime() >= to.getTime()) {
    throw AppError.validation({ from: ['Must be before to.'] });
  }
  const rows = await repository.selectWriteOffs(deps.db, from, to, query.limit);
  return {
    from: from.toISOString(),
    to: to.toISOString(),
    items: rows.map((row) => ({
      accountId: row.account_id,
      alias: row.alias,
      reservations: row.reservations,
      writtenOff: { tokens: row.tokens, credits: row.credits },
    })),
  };
}
