import type { ColumnType, Generated } from 'kysely';

export interface SessionsTable {
  id: Generated<string>;
  account_id: string;
  token_hash: Buffer;
  csrf_token_hash: Buffer;
  created_at: ColumnType<Date, never, never>;
  last_seen_at: ColumnType<Date, Date | undefined, Date>;
  expires_at: Date;
  ended_at: Date | null;
  end_reason: string | null;
  user_agent: string | null;
  ip: string | null;
}

export interface EmailCodesTable {
  id: Generated<string>;
  purpose: 'register' | 'password_reset';
  email: string;
  code_hash: Buffer;
  attempts: Generated<number>;
  expires_at: Date;
  consumed_at: Date | null;
  created_at: ColumnType<Date, never, never>;
}

export interface TwoFactorSecretsTable {
  account_id: string;
  secret_ciphertext: Buffer;
  /** null while the enrolment waits for its first code. */
  confirmed_at: Date | null;
  /** The TOTP time step of the last code accepted: a code is good once. */
  last_used_step: ColumnType<bigint | null, bigint | null | undefined, bigint | null>;
  created_at: ColumnType<Date, never, never>;
}

export interface TwoFactorRecoveryCodesTable {
  id: Generated<string>;
  account_id: string;
  code_hash: Buffer;
  used_at: Date | null;
  created_at: ColumnType<Date, never, never>;
}
