import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// Prices per usage part (docs/pricing.md): an alias priced per input and output token gets cache
// read and write prices equal to its input price, so it charges what it charged before; nothing
// per call. A priced alias has every part priced (all null: only packages pay).
// The parts a call used are kept beside input_tokens (which is then input outside any cache).

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table model_aliases
      add column cache_read_price bigint check (cache_read_price >= 0),
      add column cache_write_price bigint check (cache_write_price >= 0),
      add column cache_write_1h_price bigint check (cache_write_1h_price >= 0),
      add column request_price bigint not null default 0 check (request_price >= 0);
    update model_aliases
       set cache_read_price = input_price, cache_write_price = input_price, cache_write_1h_price = input_price
     where input_price is not null;

    alter table reservations
      add column cache_read_tokens bigint,
      add column cache_write_tokens bigint,
      add column cache_write_1h_tokens bigint;

    alter table usage_daily
      add column cache_read_tokens bigint not null default 0,
      add column cache_write_tokens bigint not null default 0,
      add column cache_write_1h_tokens bigint not null default 0;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table usage_daily drop column cache_read_tokens, drop column cache_write_tokens,
      drop column cache_write_1h_tokens;
    alter table reservations drop column cache_read_tokens, drop column cache_write_tokens,
      drop column cache_write_1h_tokens;
    alter table model_aliases drop column cache_read_price, drop column cache_write_price,
      drop column cache_write_1h_price, drop column request_price;
  `.execute(db);
}
