import type { ColumnType, Generated } from 'kysely';

export interface ApiKeysTable {
  id: Generated<string>;
  account_id: string;
  name: string;
  /** HMAC-SHA256(pepper, SHA-256(secret)). */
  lookup_hash: Buffer;
  /** AES-256-GCM of the secret, only for keys created with re-copy support. */
  secret_ciphertext: Buffer | null;
  recoverable: Generated<boolean>;
  mask: string;
  status: Generated<'active' | 'disabled' | 'revoked'>;
  scope: string[] | null;
  expires_at: Date | null;
  max_request_bytes: number;
  max_output_tokens: number;
  requests_per_minute: number;
  concurrency: number;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, never, Date>;
  rotated_at: Date | null;
  revoked_at: Date | null;
  /** When the key's first reservation was written (migration 0011); the billing functions set it. */
  first_used_at: ColumnType<Date | null, never, never>;
  /** Its last reservation, recorded once the previous record is an hour old (migration 0011). */
  last_used_at: ColumnType<Date | null, never, never>;
  /** Set by a trigger whenever state, secret, expiry or scope change (migration 0012). */
  state_version: ColumnType<bigint, never, never>;
}
