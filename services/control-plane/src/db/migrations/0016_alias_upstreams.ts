import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// An alias may be served by several upstreams (docs/routing.md): lowest priority first, weighted
// choice within a priority. model_aliases keeps provider_id and upstream_model as the alias's
// first upstream (the reservation still answers it); an alias without rows here has that one
// upstream only. Which upstream served a call, and after how many attempts, is kept beside its
// reservation for admins (never in anything a customer reads).

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table alias_upstreams (
      alias text not null references model_aliases(alias) on delete cascade,
      position integer not null check (position >= 0),
      provider_id text not null references providers(id),
      upstream_model text not null,
      priority integer not null default 0 check (priority >= 0),
      weight integer not null default 1 check (weight > 0),
      primary key (alias, position),
      unique (alias, provider_id, upstream_model)
    );

    create table reservation_routes (
      reservation_id uuid primary key,
      provider_id text not null,
      upstream_model text not null,
      attempts integer not null check (attempts > 0),
      created_at timestamptz not null default now()
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table reservation_routes, alias_upstreams`.execute(db);
}
