import type { Kysely, Selectable, Transaction, Updateable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { AccountsTable } from './accounts.table.ts';

export type AccountRow = Selectable<AccountsTable>;

export async function insertAccount(
  db: Kysely<Database>,
  values: { email: string; passwordHash: string; displayName: string | null; resellerId?: string | null },
): Promise<AccountRow> {
  return db
    .insertInto('accounts')
    .values({
      email: values.email,
      password_hash: values.passwordHash,
      display_name: values.displayName,
      reseller_id: values.resellerId ?? null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function selectAccountById(db: Kysely<Database>, id: string): Promise<AccountRow | undefined> {
  return db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function selectAccountByEmail(
  db: Kysely<Database>,
  email: string,
): Promise<AccountRow | undefined> {
  return db
    .selectFrom('accounts')
    .selectAll()
    .where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase()))
    .executeTakeFirst();
}

export async function updateAccountRow(
  db: Kysely<Database> | Transaction<Database>,
  id: string,
  changes: Updateable<AccountsTable>,
): Promise<AccountRow | undefined> {
  return db.updateTable('accounts').set(changes).where('id', '=', id).returningAll().executeTakeFirst();
}

/** Newest first, keyset-paged by (created_at, id) after the account `after`. */
export async function selectAccounts(
  db: Kysely<Database>,
  filter: {
    limit: number;
    after?: string;
    resellerId?: string;
    emailContains?: string;
    status?: 'active' | 'suspended';
    role?: 'admin' | 'reseller';
  },
): Promise<AccountRow[]> {
  let query = db.selectFrom('accounts').selectAll();
  if (filter.resellerId) query = query.where('reseller_id', '=', filter.resellerId);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.role === 'admin') query = query.where('is_admin', '=', true);
  if (filter.role === 'reseller') query = query.where('is_reseller', '=', true);
  if (filter.emailContains) {
    const pattern = `%${filter.emailContains.toLowerCase().replace(/[\\%_]/g, (char) => `\\${char}`)}%`;
    query = query.where((eb) => eb(eb.fn('lower', ['email']), 'like', pattern));
  }
  if (filter.after) {
    const after = filter.after;
    query = query.where((eb) =>
      eb(
        eb.refTuple('created_at', 'id'),
        '<',
        eb
          .selectFrom('accounts as cursor')
          .select(['cursor.created_at', 'cursor.id'])
          .where('cursor.id', '=', after)
          .$asTuple('created_at', 'id'),
      ),
    );
  }
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(filter.limit).execute();
}
