import type { ProviderKind } from '@tollgate/schemas';
import type { ColumnType } from 'kysely';

type Updated = ColumnType<Date, Date | undefined, Date>;

export interface ProvidersTable {
  id: string;
  kind: ProviderKind;
  base_url: string;
  credential_ref: string | null;
  /** The whole pool when the provider names several credentials (credential_ref is its first). */
  credential_refs: string[] | null;
  updated_at: Updated;
}

export interface ModelAliasesTable {
  alias: string;
  provider_id: string;
  upstream_model: string;
  protocols: string[];
  published: boolean;
  /** Credits per input token; null = not payable with credit. */
  input_price: bigint | null;
  output_price: bigint | null;
  /** Per usage part (migration 0018); null exactly when input_price is. */
  cache_read_price: bigint | null;
  cache_write_price: bigint | null;
  cache_write_1h_price: bigint | null;
  /** Credits per call paid from credit; 0 when none. */
  request_price: ColumnType<bigint, bigint | undefined, bigint>;
  /** Units of a weighted package one token of this alias costs (R2b, migration 0029). */
  package_rate: ColumnType<bigint, bigint | undefined, bigint>;
  default_max_output_tokens: number;
  max_output_tokens: number;
  updated_at: Updated;
}

export interface PackagesTable {
  id: string;
  name: string;
  tokens: bigint;
  validity_days: number | null;
  aliases: string[] | null;
  max_output_tokens: number | null;
  requests_per_minute: number | null;
  concurrency: number | null;
  price_amount: bigint;
  price_currency: string;
  price_exponent: number;
  published: boolean;
  /** 'tokens': every token is one unit; 'weighted': a token costs its alias's package rate (R2b). */
  counts: ColumnType<PackageCounts, PackageCounts | undefined, PackageCounts>;
  updated_at: Updated;
}

export type PackageCounts = 'tokens' | 'weighted';

/** The upstreams of an alias served by several (migration 0016); none = the alias's own one. */
export interface AliasUpstreamsTable {
  alias: string;
  position: number;
  provider_id: string;
  upstream_model: string;
  priority: number;
  weight: number;
  /** The provider's limits on the operator's account (migration 0023); null: none. */
  max_concurrency: number | null;
  requests_per_minute: number | null;
}

/** The operator's cost price of one upstream of an alias (credits per token of each part, per call). */
export interface UpstreamCostsTable {
  alias: string;
  provider_id: string;
  upstream_model: string;
  input_cost: bigint;
  output_cost: bigint;
  cache_read_cost: bigint;
  cache_write_cost: bigint;
  cache_write_1h_cost: bigint;
  request_cost: bigint;
}

/** One row: what a credit is worth and the bounds of a top-up (docs/payments.md#money). */
export interface CatalogSettingsTable {
  id: ColumnType<boolean, boolean | undefined, never>;
  credit_currency: string;
  credit_exponent: number;
  /** One credit in the currency, an exact decimal string ("0.000001"). */
  credit_value: string;
  /** Minor units; null: no bound on that side (and no top-up at all when both are null). */
  top_up_min: bigint | null;
  top_up_max: bigint | null;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}
