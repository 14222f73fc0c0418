import type { ColumnType, Generated } from 'kysely';

/** A reseller's invitation to an address; accepting it with the emailed token makes the link. */
export interface ResellerInvitationsTable {
  id: Generated<string>;
  reseller_id: string;
  email: string;
  display_name: string | null;
  token_hash: Buffer;
  status: ColumnType<'pending' | 'accepted' | 'replaced', 'pending' | undefined, 'accepted' | 'replaced'>;
  account_id: string | null;
  expires_at: Date;
  accepted_at: Date | null;
  created_at: ColumnType<Date, never, never>;
}
