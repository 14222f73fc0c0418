import { type Insertable, type Kysely, sql, type Transaction, type Updateable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { PaymentStatus } from '../payments/payments.table.ts';
import type { OrderStatus, OrdersTable } from './orders.table.ts';

type Db = Kysely<Database> | Transaction<Database>;

export interface OrderFilter {
  limit: number;
  after?: string | undefined;
  accountId?: string | undefined;
  status?: OrderStatus | undefined;
  provider?: string | undefined;
  packageId?: string | undefined;
  paymentStatus?: PaymentStatus | 'none' | undefined;
}

export function insertOrder(trx: Transaction<Database>, row: Insertable<OrdersTable>) {
  return trx.insertInto('orders').values(row).returningAll().executeTakeFirstOrThrow();
}

/**
 * The account's pending orders, counted under a lock held until the transaction ends, so that
 * parallel creations see each other's orders and the per-account bound holds.
 */
export async function countPendingOrdersLocked(trx: Transaction<Database>, accountId: string) {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`orders:${accountId}`}, 0))`.execute(trx);
  const row = await trx
    .selectFrom('orders')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('account_id', '=', accountId)
    .where('status', '=', 'pending')
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

export function findOrderByIdempotencyKey(db: Db, accountId: string, key: string) {
  return db
    .selectFrom('orders')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('idempotency_key', '=', key)
    .executeTakeFirst();
}

export function findOrder(db: Db, id: string) {
  return db.selectFrom('orders').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The order row, locked for the rest of the transaction: every state change goes through it. */
export function lockOrder(trx: Transaction<Database>, id: string) {
  return trx.selectFrom('orders').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

export function updateOrder(trx: Transaction<Database>, id: string, changes: Updateable<OrdersTable>) {
  return trx
    .updateTable('orders')
    .set({ ...changes, updated_at: new Date() })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Newest first; `after` is the id of the last order of the previous page. */
export function listOrders(db: Db, filter: OrderFilter) {
  let query = db.selectFrom('orders').selectAll();
  if (filter.accountId) query = query.where('account_id', '=', filter.accountId);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.provider) query = query.where('provider', '=', filter.provider);
  if (filter.packageId) query = query.where('package_id', '=', filter.packageId);
  if (filter.paymentStatus === 'none') {
    query = query.where((eb) =>
      eb.not(
        eb.exists(
          eb.selectFrom('payments').select('order_id').whereRef('payments.order_id', '=', 'orders.id'),
        ),
      ),
    );
  } else if (filter.paymentStatus) {
    const status = filter.paymentStatus;
    query = query.where((eb) =>
      eb.exists(
        eb
          .selectFrom('payments')
          .select('order_id')
          .whereRef('payments.order_id', '=', 'orders.id')
          .where('payments.status', '=', status),
      ),
    );
  }
  if (filter.after) {
    const after = filter.after;
    query = query.where((eb) =>
      eb(
        eb.refTuple('created_at', 'id'),
        '<',
        eb
          .selectFrom('orders as cursor')
          .select(['cursor.created_at', 'cursor.id'])
          .where('cursor.id', '=', after)
          .$asTuple('created_at', 'id'),
      ),
    );
  }
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(filter.limit).execute();
}

export function listOverduePending(db: Db, now: Date, limit: number) {
  return db
    .selectFrom('orders')
    .select(['id', 'provider'])
    .where('status', '=', 'pending')
    .where('expires_at', '<=', now)
    .orderBy('expires_at')
    .limit(limit)
    .execute();
}
