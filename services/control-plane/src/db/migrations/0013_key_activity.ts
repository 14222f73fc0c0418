import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// One key's activity (migration 0011) walks the account's index between the key's first and last
// use. For a key used twice, 90 days apart, on an account with a million calls a day, that walk
// still read every call in between (61 ms at 10 million reservations). An index on the key bounds
// every walk to the key's own calls. With the hot tier a reservation row is written once, in its
// final state and in batches, and the extra index entry did not show in the measured cost
// (Postgres CPU per reserve+settle within the runs' noise); without Redis, where each call inserts
// and then updates its row, it costs about a fifth more Postgres CPU per call.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create index reservations_key_idx on reservations (key_id, created_at desc, id desc)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index reservations_key_idx`.execute(db);
}
