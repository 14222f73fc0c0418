import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';

export interface AliasInfo {
  published: boolean;
  protocols: string[];
  providerId: string;
  upstreamModel: string;
  /**
   * The input-side prices as the scripts take them: input, five-minute cache write, one-hour cache
   * write, cache read and per call, ','-separated; '' when the alias has no credit price.
   */
  inputPrice: string;
  outputPrice: string;
  /** Units of a weighted entitlement one token costs (R2b). */
  packageRate: string;
}

/** The catalogue as reservations need it, read at most every couple of seconds (and at once after a change here). */
export function createAliasCache(db: Kysely<Database>) {
  const TTL_MS = 2_000;
  let cached: { at: number; aliases: Map<string, AliasInfo> } | null = null;
  let loading: Promise<Map<string, AliasInfo>> | null = null;
  async function load(): Promise<Map<string, AliasInfo>> {
    const rows = await db.selectFrom('model_aliases').selectAll().execute();
    const aliases = new Map(
      rows.map((row) => [
        row.alias,
        {
          published: row.published,
          protocols: row.protocols,
          providerId: row.provider_id,
          upstreamModel: row.upstream_model,
          // A credit price needs both; one without the other pays nothing from credit (as in SQL).
          inputPrice:
            row.input_price !== null && row.output_price !== null
              ? [
                  row.input_price,
                  row.cache_write_price ?? row.input_price,
                  row.cache_write_1h_price ?? row.input_price,
                  row.cache_read_price ?? row.input_price,
                  row.request_price,
                ].join(',')
              : '',
          outputPrice: row.input_price !== null && row.output_price !== null ? String(row.output_price) : '',
          packageRate: String(row.package_rate),
        },
      ]),
    );
    cached = { at: Date.now(), aliases };
    return aliases;
  }
  return {
    async get(): Promise<Map<string, AliasInfo>> {
      if (cached && Date.now() - cached.at < TTL_MS) return cached.aliases;
      loading ??= load().finally(() => {
        loading = null;
      });
      return loading;
    },
    drop(): void {
      cached = null;
    },
  };
}
