import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';

export interface NewOutboxEmail {
  recipient: string;
  subject: string;
  bodyText: string;
  kind: string;
}

export async function insertOutboxEmail(db: Kysely<Database>, email: NewOutboxEmail): Promise<string> {
  const row = await db
    .insertInto('outbox_emails')
    .values({
      recipient: email.recipient,
      subject: email.subject,
      body_text: email.bodyText,
      kind: email.kind,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/** `dropBody` wipes the text (codes and links inside) once it has left for its recipient. */
export async function markEmailSent(
  db: Kysely<Database>,
  id: string,
  now: Date,
  options: { dropBody: boolean },
): Promise<void> {
  await db
    .updateTable('outbox_emails')
    .set((eb) => ({
      sent_at: now,
      attempts: eb('attempts', '+', 1),
      last_error: null,
      ...(options.dropBody ? { body_text: '[delivered]' } : {}),
    }))
    .where('id', '=', id)
    .execute();
}

export async function markEmailFailed(db: Kysely<Database>, id: string, error: string): Promise<void> {
  await db
    .updateTable('outbox_emails')
    .set((eb) => ({ attempts: eb('attempts', '+', 1), last_error: error }))
    .where('id', '=', id)
    .execute();
}
