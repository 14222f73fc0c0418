import { type Usage, usageParts } from '@tollgate/schemas';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';

/**
 * An alias's credit prices as a credit cap counts a call (docs/billing/spend-caps.md): every
 * usage part at its price, plus the price per call; fixed for a call when it is counted. Null:
 * the alias has no credit price, and credit caps count nothing for it.
 */
export interface CapPrices {
  input: bigint;
  output: bigint;
  cacheRead: bigint;
  cacheWrite: bigint;
  cacheWrite1h: bigint;
  request: bigint;
}

/** What a call counts against caps: tokens (every part), and their credit value. */
export interface CapAmounts {
  credits: bigint;
  tokens: bigint;
}

export interface PriceRow {
  input_price: bigint | null;
  output_price: bigint | null;
  cache_read_price: bigint | null;
  cache_write_price: bigint | null;
  cache_write_1h_price: bigint | null;
  request_price: bigint;
}

export function pricesOfRow(row: PriceRow): CapPrices | null {
  if (row.input_price === null || row.output_price === null) return null;
  return {
    input: row.input_price,
    output: row.output_price,
    cacheRead: row.cache_read_price ?? row.input_price,
    cacheWrite: row.cache_write_price ?? row.input_price,
    cacheWrite1h: row.cache_write_1h_price ?? row.input_price,
    request: row.request_price,
  };
}

/** The order both engines keep a call's prices in (spend_cap_usage.prices, Redis's record). */
export function pricesList(prices: CapPrices | null): bigint[] | null {
  return (
    prices && [
      prices.input,
      prices.output,
      prices.cacheRead,
      prices.cacheWrite,
      prices.cacheWrite1h,
      prices.request,
    ]
  );
}

export async function loadPrices(
  db: Kysely<Database>,
  aliases?: readonly string[],
): Promise<Map<string, CapPrices | null>> {
  if (aliases && aliases.length === 0) return new Map();
  let query = db
    .selectFrom('model_aliases')
    .select([
      'alias',
      'input_price',
      'output_price',
      'cache_read_price',
      'cache_write_price',
      'cache_write_1h_price',
      'request_price',
    ]);
  if (aliases) query = query.where('alias', 'in', aliases);
  return new Map((await query.execute()).map((row) => [row.alias, pricesOfRow(row)]));
}

/**
 * A call's estimate: its input estimate (any part) at the highest input price of the alias, its
 * maximum output at the output price, and the price per call: never less than what it can cost
 * but for input beyond the estimate.
 */
export function estimateAmounts(estimate: Usage, prices: CapPrices | null | undefined): CapAmounts {
  const input = BigInt(estimate.inputTokens);
  const output = BigInt(estimate.outputTokens);
  if (!prices) return { tokens: input + output, credits: 0n };
  let highest = prices.input;
  for (const price of [prices.cacheRead, prices.cacheWrite, prices.cacheWrite1h]) {
    if (price > highest) highest = price;
  }
  return { tokens: input + output, credits: prices.request + input * highest + output * prices.output };
}

/** What a settled call counts: every part it used, each at its price. */
export function usageAmounts(usage: Usage, prices: CapPrices | null | undefined): CapAmounts {
  const parts = usageParts(usage);
  const tokens = parts.input + parts.cacheRead + parts.cacheWrite + parts.cacheWrite1h + parts.output;
  if (!prices) return { tokens, credits: 0n };
  return {
    tokens,
    credits:
      prices.request +
      parts.input * prices.input +
      parts.cacheRead * prices.cacheRead +
      parts.cacheWrite * prices.cacheWrite +
      parts.cacheWrite1h * prices.cacheWrite1h +
      parts.output * prices.output,
  };
}
