import type { Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';

/**
 * Claims (reseller, Idempotency-Key) for a grant. Concurrent claims of one key wait on the unique
 * index until the first commits; then this returns undefined and the caller reads the first one.
 */
export function claimGrant(
  trx: Transaction<Database>,
  values: { resellerId: string; customerId: string; idempotencyKey: string | null; requestHash: string },
) {
  return trx
    .insertInto('reseller_grants')
    .values({
      reseller_id: values.resellerId,
      customer_id: values.customerId,
      idempotency_key: values.idempotencyKey,
      request_hash: values.requestHash,
      result: null,
    })
    .onConflict((conflict) =>
      conflict
        .columns(['reseller_id', 'idempotency_key'])
        .where('idempotency_key', 'is not', null)
        .doNothing(),
    )
    .returning('id')
    .executeTakeFirst();
}

export function selectGrantByKey(trx: Transaction<Database>, resellerId: string, idempotencyKey: string) {
  return trx
    .selectFrom('reseller_grants')
    .select(['id', 'request_hash', 'result'])
    .where('reseller_id', '=', resellerId)
    .where('idempotency_key', '=', idempotencyKey)
    .executeTakeFirst();
}

export async function storeGrantResult(
  trx: Transaction<Database>,
  id: string,
  result: unknown,
): Promise<void> {
  await trx
    .updateTable('reseller_grants')
    .set({ result: JSON.stringify(result) })
    .where('id', '=', id)
    .execute();
}
