import type { UpstreamBreakerReport } from '@tollgate/schemas';
import type { ColumnType } from 'kysely';

export interface StatusGatewaysTable {
  gateway_id: string;
  started_at: Date;
  last_seen_at: Date;
  redis: 'ok' | 'failing' | 'not_configured';
  /** The credentials the gateway took out of rotation (its last heartbeat's list). */
  refused_credentials: ColumnType<RefusedCredential[], string | undefined, string>;
  /** The upstreams open or benched as the gateway last reported them (migration 0024). */
  upstream_breakers: ColumnType<UpstreamBreakerReport[], string | undefined, string>;
}

/** A provider credential a gateway stopped sending because the provider refused it. */
export interface RefusedCredential {
  providerId: string;
  credential: string;
  upstreamStatus: number | null;
  refusedAt: string;
}

export interface StatusProviderOutcomesTable {
  provider_id: string;
  minute: Date;
  successes: bigint;
  failures: bigint;
}

export interface StatusSamplesTable {
  component: string;
  sampled_at: Date;
  status: 'operational' | 'degraded' | 'down' | 'unknown';
}
