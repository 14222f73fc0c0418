import type { Kysely, Transaction, Updateable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import * as repository from './payments.repository.ts';
import type { PaymentsTable } from './payments.table.ts';

/**
 * The payment records, for the orders module (which settles them in its own transactions).
 * The flows that talk to providers are in payment-flows.service.ts.
 */
export function findPaymentOfOrder(db: Kysely<Database> | Transaction<Database>, orderId: string) {
  return repository.findPayment(db, orderId);
}

export function findPaymentsOfOrders(db: Kysely<Database>, orderIds: string[]) {
  return repository.findPayments(db, orderIds);
}

/** Records what became of a payment, inside the caller's transaction. */
export function markPayment(trx: Transaction<Database>, orderId: string, changes: Updateable<PaymentsTable>) {
  return repository.updatePayment(trx, orderId, changes);
}
