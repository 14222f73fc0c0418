export interface StatusGatewaysTable {
  gateway_id: string;
  started_at: Date;
  last_seen_at: Date;
  redis: 'ok' | 'failing' | 'not_configured';
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
