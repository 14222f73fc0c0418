import type { UpstreamBreakerReport } from '@tollgate/schemas';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { RefusedCredential, StatusSamplesTable } from './status.table.ts';

type Db = Kysely<Database>;

export async function recordHeartbeat(
  db: Db,
  beat: {
    gatewayId: string;
    startedAt: Date;
    seenAt: Date;
    redis: 'ok' | 'failing' | 'not_configured';
    refusedCredentials: RefusedCredential[];
    upstreamBreakers: UpstreamBreakerReport[];
  },
): Promise<void> {
  const refused = JSON.stringify(beat.refusedCredentials);
  const breakers = JSON.stringify(beat.upstreamBreakers);
  await db
    .insertInto('status_gateways')
    .values({
      gateway_id: beat.gatewayId,
      started_at: beat.startedAt,
      last_seen_at: beat.seenAt,
      redis: beat.redis,
      refused_credentials: refused,
      upstream_breakers: breakers,
    })
    .onConflict((conflict) =>
      conflict.column('gateway_id').doUpdateSet({
        last_seen_at: beat.seenAt,
        redis: beat.redis,
        refused_credentials: refused,
        upstream_breakers: breakers,
      }),
    )
    .execute();
}

/** The refused credentials of each gateway seen since `since`. */
export async function listRefusedCredentials(db: Db, since: Date) {
  return db
    .selectFrom('status_gateways')
    .select(['gateway_id', 'last_seen_at', 'refused_credentials'])
    .where('last_seen_at', '>=', since)
    .execute();
}

/** The upstream breakers each gateway seen since `since` reported, the latest first. */
export async function listUpstreamBreakers(db: Db, since: Date) {
  return db
    .selectFrom('status_gateways')
    .select(['gateway_id', 'last_seen_at', 'upstream_breakers'])
    .where('last_seen_at', '>=', since)
    .orderBy('last_seen_at', 'desc')
    .execute();
}

/** Adds outcome counts to the provider's minute; concurrent gateways add, never overwrite. */
export async function addProviderOutcomes(
  db: Db,
  minute: Date,
  counts: { providerId: string; successes: number; failures: number }[],
): Promise<void> {
  const rows = counts
    .filter((count) => count.successes > 0 || count.failures > 0)
    .map((count) => ({
      provider_id: count.providerId,
      minute,
      successes: BigInt(count.successes),
      failures: BigInt(count.failures),
    }));
  if (rows.length === 0) return;
  await db
    .insertInto('status_provider_outcomes')
    .values(rows)
    .onConflict((conflict) =>
      conflict.columns(['provider_id', 'minute']).doUpdateSet({
        successes: sql`status_provider_outcomes.successes + excluded.successes`,
        failures: sql`status_provider_outcomes.failures + excluded.failures`,
      }),
    )
    .execute();
}

export function listGatewaysSeenSince(db: Db, since: Date) {
  return db
    .selectFrom('status_gateways')
    .select(['gateway_id', 'redis', 'last_seen_at'])
    .where('last_seen_at', '>=', since)
    .execute();
}

export async function sumProviderOutcomesSince(
  db: Db,
  since: Date,
): Promise<Map<string, { successes: bigint; failures: bigint }>> {
  const rows = await db
    .selectFrom('status_provider_outcomes')
    .select([
      'provider_id',
      sql<string>`sum(successes)::text`.as('successes'),
      sql<string>`sum(failures)::text`.as('failures'),
    ])
    .where('minute', '>=', since)
    .groupBy('provider_id')
    .execute();
  return new Map(
    rows.map((row) => [
      row.provider_id,
      { successes: BigInt(row.successes), failures: BigInt(row.failures) },
    ]),
  );
}

export async function insertSamples(db: Db, samples: StatusSamplesTable[]): Promise<void> {
  if (samples.length === 0) return;
  await db
    .insertInto('status_samples')
    .values(samples)
    .onConflict((conflict) => conflict.columns(['component', 'sampled_at']).doNothing())
    .execute();
}

/** Samples per component and UTC day: how many were taken and how many in each state. */
export function summariseSamplesSince(db: Db, since: Date) {
  return db
    .selectFrom('status_samples')
    .select([
      'component',
      sql<string>`to_char(sampled_at at time zone 'UTC', 'YYYY-MM-DD')`.as('day'),
      sql<number>`count(*)::int`.as('total'),
      sql<number>`(count(*) filter (where status = 'operational'))::int`.as('operational'),
      sql<number>`(count(*) filter (where status = 'degraded'))::int`.as('degraded'),
      sql<number>`(count(*) filter (where status = 'down'))::int`.as('down'),
    ])
    .where('sampled_at', '>=', since)
    .groupBy(['component', 'day'])
    .orderBy('day')
    .execute();
}

/** Drops what the history no longer shows, so the tables stay small. */
export async function pruneBefore(db: Db, before: Date): Promise<void> {
  await db.deleteFrom('status_samples').where('sampled_at', '<', before).execute();
  await db.deleteFrom('status_provider_outcomes').where('minute', '<', before).execute();
  await db.deleteFrom('status_gateways').where('last_seen_at', '<', before).execute();
}
