import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    -- One row per gateway process; the last heartbeat says whether it is up.
    create table status_gateways (
      gateway_id uuid primary key,
      started_at timestamptz not null,
      last_seen_at timestamptz not null,
      redis text not null check (redis in ('ok', 'failing', 'not_configured'))
    );
    create index status_gateways_last_seen on status_gateways (last_seen_at);

    -- Upstream outcomes per provider and minute, summed over every gateway.
    create table status_provider_outcomes (
      provider_id text not null,
      minute timestamptz not null,
      successes bigint not null default 0 check (successes >= 0),
      failures bigint not null default 0 check (failures >= 0),
      primary key (provider_id, minute)
    );

    -- The state of each component, sampled periodically: the status page's history.
    create table status_samples (
      component text not null,
      sampled_at timestamptz not null,
      status text not null check (status in ('operational', 'degraded', 'down', 'unknown')),
      primary key (component, sampled_at)
    );
    create index status_samples_sampled_at on status_samples (sampled_at);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop table status_samples;
    drop table status_provider_outcomes;
    drop table status_gateways;
  `.execute(db);
}
