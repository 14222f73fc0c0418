import type { ColumnType, Generated } from 'kysely';

export interface OutboxEmailsTable {
  id: Generated<string>;
  recipient: string;
  subject: string;
  body_text: string;
  kind: string;
  created_at: ColumnType<Date, never, never>;
  sent_at: Date | null;
  attempts: Generated<number>;
  last_error: string | null;
}
