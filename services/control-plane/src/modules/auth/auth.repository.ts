import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { EmailCodesTable, SessionsTable } from './auth.table.ts';

export type SessionRow = Selectable<SessionsTable>;
export type EmailCodeRow = Selectable<EmailCodesTable>;
export type CodePurpose = EmailCodesTable['purpose'];

// Sessions.

export async function insertSession(
  db: Kysely<Database>,
  values: {
    accountId: string;
    tokenHash: Buffer;
    csrfTokenHash: Buffer;
    now: Date;
    expiresAt: Date;
    userAgent: string | null;
    ip: string | null;
  },
): Promise<SessionRow> {
  return db
    .insertInto('sessions')
    .values({
      account_id: values.accountId,
      token_hash: values.tokenHash,
      csrf_token_hash: values.csrfTokenHash,
      last_seen_at: values.now,
      expires_at: values.expiresAt,
      user_agent: values.userAgent,
      ip: values.ip,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function selectSessionByTokenHash(
  db: Kysely<Database>,
  tokenHash: Buffer,
): Promise<SessionRow | undefined> {
  return db.selectFrom('sessions').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

export async function touchSession(db: Kysely<Database>, id: string, now: Date): Promise<void> {
  await db.updateTable('sessions').set({ last_seen_at: now }).where('id', '=', id).execute();
}

/** Ends the sessions matched (only those still open); returns the ids ended. */
export async function endSessions(
  db: Kysely<Database>,
  match: { accountId: string; sessionId?: string; exceptSessionId?: string },
  reason: string,
  now: Date,
): Promise<string[]> {
  let query = db
    .updateTable('sessions')
    .set({ ended_at: now, end_reason: reason })
    .where('account_id', '=', match.accountId)
    .where('ended_at', 'is', null);
  if (match.sessionId) query = query.where('id', '=', match.sessionId);
  if (match.exceptSessionId) query = query.where('id', '!=', match.exceptSessionId);
  const rows = await query.returning('id').execute();
  return rows.map((row) => row.id);
}

/** Sessions neither ended nor past their absolute or idle limit. */
export async function selectOpenSessions(
  db: Kysely<Database>,
  accountId: string,
  now: Date,
  idleCutoff: Date,
): Promise<SessionRow[]> {
  return db
    .selectFrom('sessions')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('ended_at', 'is', null)
    .where('expires_at', '>', now)
    .where('last_seen_at', '>', idleCutoff)
    .orderBy('last_seen_at', 'desc')
    .execute();
}

export async function selectSessionOfAccount(
  db: Kysely<Database>,
  accountId: string,
  sessionId: string,
): Promise<SessionRow | undefined> {
  return db
    .selectFrom('sessions')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', sessionId)
    .executeTakeFirst();
}

export async function hasSignedInFrom(db: Kysely<Database>, accountId: string, ip: string): Promise<boolean> {
  const row = await db
    .selectFrom('sessions')
    .select('id')
    .where('account_id', '=', accountId)
    .where('ip', '=', ip)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

// Email codes (sign-up codes and password-reset tokens).

export async function insertEmailCode(
  db: Kysely<Database>,
  values: { purpose: CodePurpose; email: string; codeHash: Buffer; expiresAt: Date },
): Promise<void> {
  await db
    .insertInto('email_codes')
    .values({
      purpose: values.purpose,
      email: values.email,
      code_hash: values.codeHash,
      expires_at: values.expiresAt,
    })
    .execute();
}

/** Voids every unused code of a purpose for an email (a new one replaces them, or one was used). */
export async function voidEmailCodes(
  db: Kysely<Database>,
  purpose: CodePurpose,
  email: string,
  now: Date,
): Promise<void> {
  await db
    .updateTable('email_codes')
    .set({ consumed_at: now })
    .where('purpose', '=', purpose)
    .where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase()))
    .where('consumed_at', 'is', null)
    .execute();
}

/** The newest usable code for an email, locked until the transaction ends. */
export async function selectLatestCodeForUpdate(
  db: Kysely<Database>,
  purpose: CodePurpose,
  email: string,
  now: Date,
): Promise<EmailCodeRow | undefined> {
  return db
    .selectFrom('email_codes')
    .selectAll()
    .where('purpose', '=', purpose)
    .where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase()))
    .where('consumed_at', 'is', null)
    .where('expires_at', '>', now)
    .orderBy('created_at', 'desc')
    .limit(1)
    .forUpdate()
    .executeTakeFirst();
}

export async function selectUsableCodeByHashForUpdate(
  db: Kysely<Database>,
  purpose: CodePurpose,
  codeHash: Buffer,
  now: Date,
): Promise<EmailCodeRow | undefined> {
  return db
    .selectFrom('email_codes')
    .selectAll()
    .where('purpose', '=', purpose)
    .where('code_hash', '=', codeHash)
    .where('consumed_at', 'is', null)
    .where('expires_at', '>', now)
    .forUpdate()
    .executeTakeFirst();
}

export async function countCodeAttempt(db: Kysely<Database>, id: string): Promise<void> {
  await db
    .updateTable('email_codes')
    .set((eb) => ({ attempts: eb('attempts', '+', 1) }))
    .where('id', '=', id)
    .execute();
}

export async function consumeEmailCode(db: Kysely<Database>, id: string, now: Date): Promise<void> {
  await db.updateTable('email_codes').set({ consumed_at: now }).where('id', '=', id).execute();
}
