import { type Insertable, type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { PromotionsTable } from './promotions.table.ts';

type Db = Kysely<Database> | Transaction<Database>;

export type NewPromotionRow = Insertable<PromotionsTable>;

export function insertPromotion(db: Db, row: NewPromotionRow) {
  return db.insertInto('promotions').values(row).returningAll().executeTakeFirstOrThrow();
}

export function updatePromotion(
  db: Db,
  id: string,
  changes: Partial<Pick<NewPromotionRow, 'active' | 'ends_at' | 'total_limit' | 'per_account_limit'>>,
) {
  return db
    .updateTable('promotions')
    .set({ ...changes, updated_at: new Date() })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export function findPromotionByCode(db: Db, code: string) {
  return db.selectFrom('promotions').selectAll().where('code', '=', code).executeTakeFirst();
}

export function findPromotionById(db: Db, id: string) {
  return db.selectFrom('promotions').selectAll().where('id', '=', id).executeTakeFirst();
}

export function listPromotions(db: Db, filter: { limit: number; after?: string; active?: boolean }) {
  let query = db.selectFrom('promotions').selectAll();
  if (filter.active !== undefined) query = query.where('active', '=', filter.active);
  if (filter.after) {
    const after = filter.after;
    query = query.where((eb) =>
      eb(
        eb.refTuple('created_at', 'id'),
        '<',
        eb
          .selectFrom('promotions as cursor')
          .select(['cursor.created_at', 'cursor.id'])
          .where('cursor.id', '=', after)
          .$asTuple('created_at', 'id'),
      ),
    );
  }
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(filter.limit).execute();
}

/** Redemptions an account holds or has consumed of a promotion (serialised by the caller's lock). */
export async function countAccountRedemptions(
  trx: Transaction<Database>,
  promotionId: string,
  accountId: string,
) {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`${promotionId}:${accountId}`}, 0))`.execute(trx);
  const row = await trx
    .selectFrom('promotion_redemptions')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('promotion_id', '=', promotionId)
    .where('account_id', '=', accountId)
    .where('status', 'in', ['held', 'consumed'])
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/** The guarded update that keeps a total limit under any concurrency: false = none left. */
export async function takeRedemption(trx: Transaction<Database>, promotionId: string): Promise<boolean> {
  const result = await trx
    .updateTable('promotions')
    .set((eb) => ({ held: eb('held', '+', 1) }))
    .where('id', '=', promotionId)
    .where((eb) => eb.or([eb('total_limit', 'is', null), eb('held', '<', eb.ref('total_limit'))]))
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

export function insertRedemption(
  trx: Transaction<Database>,
  row: { order_id: string; promotion_id: string; account_id: string },
) {
  return trx
    .insertInto('promotion_redemptions')
    .values({ ...row, status: 'held' })
    .execute();
}

/** held -> returned, giving the redemption back to the promotion. */
export async function returnRedemption(trx: Transaction<Database>, orderId: string): Promise<void> {
  const row = await trx
    .updateTable('promotion_redemptions')
    .set({ status: 'returned', updated_at: new Date() })
    .where('order_id', '=', orderId)
    .where('status', '=', 'held')
    .returning('promotion_id')
    .executeTakeFirst();
  if (row) {
    await trx
      .updateTable('promotions')
      .set((eb) => ({ held: eb('held', '-', 1) }))
      .where('id', '=', row.promotion_id)
      .execute();
  }
}

/**
 * -> consumed. A redemption returned when its order closed is taken again when a payment arrives
 * late, only within the limits (per account, then the guarded total): another order may have
 * taken it since. Returns false when it cannot be taken; nothing changes then.
 */
export async function consumeRedemption(trx: Transaction<Database>, orderId: string): Promise<boolean> {
  const row = await trx
    .selectFrom('promotion_redemptions')
    .select(['status', 'promotion_id', 'account_id'])
    .where('order_id', '=', orderId)
    .forUpdate()
    .executeTakeFirst();
  if (!row || row.status === 'consumed') return true;
  if (row.status === 'returned') {
    const promotion = await findPromotionById(trx, row.promotion_id);
    const uses = await countAccountRedemptions(trx, row.promotion_id, row.account_id);
    const perAccount = promotion?.per_account_limit ?? null;
    if (perAccount !== null && uses >= perAccount) return false;
    if (!(await takeRedemption(trx, row.promotion_id))) return false;
  }
  await trx
    .updateTable('promotion_redemptions')
    .set({ status: 'consumed', updated_at: new Date() })
    .where('order_id', '=', orderId)
    .execute();
  return true;
}
