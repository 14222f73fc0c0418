import type { ColumnType, Generated } from 'kysely';

export interface ManagementKeysTable {
  id: Generated<string>;
  reseller_id: string;
  name: string;
  /** HMAC-SHA256(pepper, SHA-256(secret)), as for inference keys. */
  lookup_hash: Buffer;
  mask: string;
  scopes: string[];
  expires_at: Date | null;
  last_used_at: Date | null;
  revoked_at: Date | null;
  created_at: ColumnType<Date, never, never>;
}

export interface ResellerGrantsTable {
  id: Generated<string>;
  reseller_id: string;
  customer_id: string;
  idempotency_key: string | null;
  request_hash: string;
  result: ColumnType<unknown, string | null, string>;
  created_at: ColumnType<Date, never, never>;
}
