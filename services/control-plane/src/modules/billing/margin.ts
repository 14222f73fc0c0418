import { AppError } from '@tollgate/errors';
import type { Dependencies } from '../../deps.ts';
import * as repository from './reports.repository.ts';

const DAY_MS = 86_400_000;
/** Without `from`/`to` the report covers the last 30 days. */
const DEFAULT_RANGE_DAYS = 30;

export interface MarginRow {
  alias: string;
  providerId: string;
  upstreamModel: string;
  /** Settled calls this upstream served. */
  calls: string;
  usage: {
    inputTokens: string;
    outputTokens: string;
    cacheReadTokens: string;
    cacheWriteTokens: string;
    cacheWrite1hTokens: string;
  };
  /** What those calls charged: credits, and package tokens (whose money was taken when sold). */
  revenue: { credits: string; tokens: string };
  /** Their usage at the upstream's cost price; null when it has none. */
  costCredits: string | null;
  /** Credits charged minus cost; null without a cost price. */
  marginCredits: string | null;
}

/**
 * Revenue against the operator's cost, by alias and the upstream that served (docs/routing.md):
 * settled calls finished in [from, to), their usage priced at each upstream's cost price as it is
 * now. Calls paid with package tokens show their tokens apart: their money came with the package.
 */
export async function reportMargin(
  deps: Dependencies,
  query: { from?: Date; to?: Date },
): Promise<{ from: string; to: string; items: MarginRow[] }> {
  const to = query.to ?? deps.clock.now();
  const from = query.from ?? new Date(to.getTime() - DEFAULT_RANGE_DAYS * DAY_MS);
  if (from.getTime() >= to.getTime()) {
    throw AppError.validation({ from: ['Must be before to.'] });
  }
  const rows = await repository.selectMargin(deps.db, from, to);
  return {
    from: from.toISOString(),
    to: to.toISOString(),
    items: rows.map((row) => ({
      alias: row.alias,
      providerId: row.provider_id,
      upstreamModel: row.upstream_model,
      calls: row.calls,
      usage: {
        inputTokens: row.input_tokens,
        outputTokens: row.output_tokens,
        cacheReadTokens: row.cache_read_tokens,
        cacheWriteTokens: row.cache_write_tokens,
        cacheWrite1hTokens: row.cache_write_1h_tokens,
      },
      revenue: { credits: row.charged_credits, tokens: row.charged_tokens },
      costCredits: row.cost_credits,
      marginCredits:
        row.cost_credits === null ? null : String(BigInt(row.charged_credits) - BigInt(row.cost_credits)),
    })),
  };
}
