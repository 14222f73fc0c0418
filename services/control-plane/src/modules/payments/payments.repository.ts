import type { Insertable, Kysely, Transaction, Updateable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { PaymentsTable } from './payments.table.ts';

type Db = Kysely<Database> | Transaction<Database>;

export function findPayment(db: Db, orderId: string) {
  return db.selectFrom('payments').selectAll().where('order_id', '=', orderId).executeTakeFirst();
}

export function findPayments(db: Db, orderIds: string[]) {
  if (orderIds.length === 0) return Promise.resolve([]);
  return db.selectFrom('payments').selectAll().where('order_id', 'in', orderIds).execute();
}

export function findPaymentByProviderId(db: Db, provider: string, providerPaymentId: string) {
  return db
    .selectFrom('payments')
    .selectAll()
    .where('provider', '=', provider)
    .where('provider_payment_id', '=', providerPaymentId)
    .executeTakeFirst();
}

export function insertPayment(trx: Transaction<Database>, row: Insertable<PaymentsTable>) {
  return trx.insertInto('payments').values(row).returningAll().executeTakeFirstOrThrow();
}

export function updatePayment(trx: Db, orderId: string, changes: Updateable<PaymentsTable>) {
  return trx
    .updateTable('payments')
    .set({ ...changes, updated_at: new Date() })
    .where('order_id', '=', orderId)
    .execute();
}

/** Pending payments of the given providers not asked about since `before`, oldest first. */
export function listPaymentsToRecheck(db: Db, providers: string[], before: Date, limit: number) {
  if (providers.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('payments')
    .selectAll()
    .where('status', '=', 'pending')
    .where('provider', 'in', providers)
    .where((eb) => eb.or([eb('checked_at', 'is', null), eb('checked_at', '<', before)]))
    .orderBy('checked_at', (order) => order.asc().nullsFirst())
    .limit(limit)
    .execute();
}

export function findEvent(db: Db, provider: string, eventId: string) {
  return db
    .selectFrom('payment_events')
    .selectAll()
    .where('provider', '=', provider)
    .where('event_id', '=', eventId)
    .executeTakeFirst();
}

export function recordEvent(
  db: Db,
  row: { provider: string; event_id: string; type: string; order_id: string | null; outcome: string },
) {
  return db
    .insertInto('payment_events')
    .values(row)
    .onConflict((conflict) => conflict.columns(['provider', 'event_id']).doNothing())
    .execute();
}
