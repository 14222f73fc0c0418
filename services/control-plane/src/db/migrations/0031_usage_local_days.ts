import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// The usage rollup counts each call on its day of creation in its account's timezone (the one of
// its spend caps, spend_cap_accounts; UTC without one) instead of the UTC day. It is derived data:
// emptied and its watermark reset, the next pass rebuilds it (docs/decisions/usage-rollup.md).

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    truncate usage_daily;
    update usage_rollup_state set watermark = '-infinity', advanced_at = null;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    truncate usage_daily;
    update usage_rollup_state set watermark = '-infinity', advanced_at = null;
  `.execute(db);
}
