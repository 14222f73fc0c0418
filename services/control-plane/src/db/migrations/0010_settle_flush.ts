import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// A settlement batch locks the balances it changes. Committed the usual way, it holds those locks
// while Postgres waits for the disk (the WAL flush of its commit), and every reservation of the
// same accounts waits behind it. tollgate_finish_unflushed commits without waiting; the caller
// then commits a small mark durably before it acknowledges the batch. The WAL is flushed in
// order, so the mark's flush makes the batch durable too, and nobody waits for the disk while
// holding a balance. A crash before the mark loses only batches nobody was told about: the
// gateway sends them again (finishes are idempotent by reservation id).

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    -- Several rows, so that marks committed at the same time do not queue on one row's lock.
    create table billing_flush_marks (
      slot smallint primary key,
      marked_at timestamptz not null
    );
    insert into billing_flush_marks (slot, marked_at) select s, now() from generate_series(0, 63) s;

    create function tollgate_finish_unflushed(p_items jsonb) returns jsonb language plpgsql as $fn$
    begin
      perform set_config('synchronous_commit', 'off', true);
      return tollgate_finish(p_items);
    end $fn$;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop function tollgate_finish_unflushed(jsonb);
    drop table billing_flush_marks;
  `.execute(db);
}
