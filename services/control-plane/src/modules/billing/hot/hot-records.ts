import { RECORD_FIELDS, splitFields } from './hot-layout.ts';

/**
 * A finished call as the hot tier's finish script records it (RECORD_FIELDS), and the row Postgres
 * gets for it. Every figure is an integer string; write-offs are computed here, exactly, from the
 * usage the provider reported, since Redis counts in doubles.
 */

export function parseRecord(text: string): FinishedRecord {
  const record = splitFields(RECORD_FIELDS, text);
  if (!record) throw new Error('malformed hot-tier record');
  return record as FinishedRecord;
}

export interface FinishedRecord {
  id: string;
  action: 'settle' | 'release' | 'hold';
  status: 'settled' | 'released' | 'held';
  outcome: string;
  httpStatus: string;
  lease: string;
  keyId: string;
  alias: string;
  surface: string;
  /** When it was reserved, µs since the epoch. */
  created: string;
  estIn: string;
  estOut: string;
  reservedTokens: string;
  reservedCredits: string;
  /**
   * 'e:<entitlement>:<amount>' ('e:<entitlement>:<amount>:<rate>' when weighted, R2b) and
   * 'c:c:<amount>:<input prices>:<output price>', ';'-separated; input prices as PriceList.
   */
  legs: string;
  /** The input parts, ','-separated: input, 5-minute write, 1-hour write, cache read (one: input). */
  usageIn: string;
  usageOut: string;
  /** When it finished (ms). */
  at: string;
  /** '<entitlement or c>:<amount>', ';'-separated: what was charged, per source. */
  charges: string;
  /** Tokens the entitlement legs took from the input parts, and from output. */
  legTakeIn: string;
  legTakeOut: string;
  creditTake: string;
  /** The credit leg's input prices (PriceList) and output price. */
  creditIn: string;
  creditOut: string;
  overTakeIn: string;
  overTakeOut: string;
  overCredit: string;
  /** The alias's prices at settle time (PriceList and output), when usage went beyond the legs. */
  overIn: string;
  overOut: string;
  /** '1': Redis did not know the call (lost with it, or released before its reserve arrived). */
  forgotten: string;
}

export interface PersistItem {
  id: string;
  account_id: string;
  key_id: string;
  alias: string;
  surface: string;
  status: FinishedRecord['status'];
  outcome: string;
  http_status: number | null;
  created_at: string;
  estimate_input: string;
  estimate_output: string;
  legs: Array<{
    source: 'entitlement' | 'credit';
    entitlementId?: string;
    amount: string;
    /** A weighted entitlement leg's units per token (R2b). */
    rate?: string;
    inputPrice?: string;
    outputPrice?: string;
    cacheWritePrice?: string;
    cacheWrite1hPrice?: string;
    cacheReadPrice?: string;
    requestPrice?: string;
  }>;
  reserved_tokens: string;
  reserved_credits: string;
  input_tokens: string | null;
  output_tokens: string | null;
  cache_read_tokens: string | null;
  cache_write_tokens: string | null;
  cache_write_1h_tokens: string | null;
  charges: Array<{ entitlementId: string | null; amount: string }>;
  charged_tokens: string;
  charged_credits: string;
  written_off_tokens: string;
  written_off_credits: string;
  lease_id: string;
}

const INT8_MAX = 9_223_372_036_854_775_807n;
const big = (value: string) => (value === '' ? 0n : BigInt(value));

/** µs since the epoch as an ISO time Postgres reads to the microsecond. */
export function isoFromMicros(micros: string): string {
  const value = BigInt(micros);
  const iso = new Date(Number(value / 1000n)).toISOString();
  return `${iso.slice(0, -1)}${String(value % 1000n).padStart(3, '0')}Z`;
}

/**
 * A price list as the scripts write it: input, 5-minute cache write, 1-hour cache write, cache read
 * and per call, ','-separated; one written before cache parts were priced apart has input alone
 * (every input part at it, nothing per call).
 */
export function parsePriceList(text: string): { input: bigint[]; request: bigint } {
  const [input = '0', write, write1h, read, request] = text.split(',');
  return {
    input: [big(input), big(write ?? input), big(write1h ?? input), big(read ?? input)],
    request: big(request ?? '0'),
  };
}

/** The usage parts in the order a package's tokens cover them: the input parts, then output. */
function usagePartsOf(record: FinishedRecord): bigint[] {
  const [input = '0', write = '0', write1h = '0', read = '0'] = record.usageIn.split(',');
  return [big(input), big(write), big(write1h), big(read), big(record.usageOut)];
}

const minOf = (a: bigint, b: bigint) => (a < b ? a : b);
const total = (parts: bigint[]) => parts.reduce((sum, part) => sum + part, 0n);

/** The parts left after `take` tokens, taken in order (R9). */
function takeParts(parts: bigint[], take: bigint): bigint[] {
  let left = take;
  return parts.map((part) => {
    const taken = minOf(part, left);
    left -= taken;
    return part - taken;
  });
}

/** What the parts cost at a price list and output price; the call's price when any is left. */
function costOf(parts: bigint[], inputPrices: string, outputPrice: string): bigint {
  if (total(parts) === 0n) return 0n;
  const list = parsePriceList(inputPrices);
  const prices = [...list.input, big(outputPrice)];
  return parts.reduce((sum, part, index) => sum + part * prices[index]!, list.request);
}

export function parseLegs(text: string): PersistItem['legs'] {
  return text
    .split(';')
    .filter(Boolean)
    .map((part) => {
      const [kind, source, amount, inputPrice, outputPrice] = part.split(':') as [
        string,
        string,
        string,
        string?,
        string?,
      ];
      // R2b: a weighted leg carries its rate where the credit leg carries prices.
      if (kind !== 'c')
        return inputPrice
          ? { source: 'entitlement', entitlementId: source, amount, rate: inputPrice }
          : { source: 'entitlement', entitlementId: source, amount };
      // The leg as Postgres records one (tollgate_reserve_one), so a held call settles the same there.
      const [input = '0', write, write1h, read, request] = (inputPrice ?? '0').split(',');
      return {
        source: 'credit',
        amount,
        inputPrice: input,
        outputPrice: outputPrice ?? '0',
        cacheWritePrice: write ?? input,
        cacheWrite1hPrice: write1h ?? input,
        cacheReadPrice: read ?? input,
        requestPrice: request ?? '0',
      };
    });
}

/**
 * What a settled call could not be charged, as tollgate_settle_legs and tollgate_charge_available
 * compute it: tokens of an alias without a credit price beyond everything the account holds, and
 * credits owed beyond its balance.
 */
export function writeOffsOf(record: FinishedRecord): { tokens: bigint; credits: bigint } {
  if (record.status !== 'settled') return { tokens: 0n, credits: 0n };
  const afterLegs = takeParts(usagePartsOf(record), big(record.legTakeIn) + big(record.legTakeOut));
  let owed = 0n;
  let tokens = 0n;
  if (record.creditIn !== '') {
    owed = costOf(afterLegs, record.creditIn, record.creditOut) - big(record.creditTake);
  } else {
    const left = takeParts(afterLegs, big(record.overTakeIn) + big(record.overTakeOut));
    if (total(left) > 0n) {
      if (record.overIn !== '') owed = costOf(left, record.overIn, record.overOut);
      else tokens = total(left);
    }
  }
  const credits = owed - big(record.overCredit);
  return { tokens, credits: credits > INT8_MAX ? INT8_MAX : credits < 0n ? 0n : credits };
}

export function persistItemOf(accountId: string, record: FinishedRecord): PersistItem {
  const charges = record.charges
    .split(';')
    .filter(Boolean)
    .map((part) => {
      const [source, amount] = part.split(':') as [string, string];
      return { entitlementId: source === 'c' ? null : source, amount };
    });
  const chargedTokens = charges
    .filter((charge) => charge.entitlementId !== null)
    .reduce((sum, charge) => sum + BigInt(charge.amount), 0n);
  const chargedCredits = charges
    .filter((charge) => charge.entitlementId === null)
    .reduce((sum, charge) => sum + BigInt(charge.amount), 0n);
  const writtenOff = writeOffsOf(record);
  const settled = record.status === 'settled';
  const parts = usagePartsOf(record);
  const part = (index: number) => (settled ? String(parts[index]) : null);
  return {
    id: record.id,
    account_id: accountId,
    key_id: record.keyId,
    alias: record.alias,
    surface: record.surface,
    status: record.status,
    outcome: record.outcome,
    http_status: record.httpStatus === '' ? null : Number(record.httpStatus),
    created_at: isoFromMicros(record.created),
    estimate_input: record.estIn,
    estimate_output: record.estOut,
    legs: parseLegs(record.legs),
    reserved_tokens: record.reservedTokens,
    reserved_credits: record.reservedCredits,
    input_tokens: part(0),
    output_tokens: part(4),
    cache_write_tokens: part(1),
    cache_write_1h_tokens: part(2),
    cache_read_tokens: part(3),
    charges,
    charged_tokens: String(chargedTokens),
    charged_credits: String(chargedCredits),
    written_off_tokens: String(writtenOff.tokens),
    written_off_credits: String(writtenOff.credits),
    lease_id: record.lease,
  };
}

/**
 * The call of tollgate_hot_persist (db/functions/hot-tier.sql): one array per column. The routes
 * of routed calls (docs/routing.md) are inserted by the same statement, so they commit with the
 * calls or not at all; a repeat changes nothing.
 */
export const PERSIST_SQL = `with routes as (
  insert into reservation_routes (reservation_id, provider_id, upstream_model, attempts)
  select * from unnest($28::uuid[], $29::text[], $30::text[], $31::int[])
  on conflict (reservation_id) do nothing)
select tollgate_hot_persist($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[],
  $6::text[], $7::text[], $8::int[], $9::timestamptz[], $10::bigint[], $11::bigint[], $12::text[], $13::bigint[],
  $14::bigint[], $15::bigint[], $16::bigint[], $17::bigint[], $18::bigint[], $19::bigint[], $20::bigint[],
  $21::uuid[], $22::int[], $23::uuid[], $24::bigint[], $25::bigint[], $26::bigint[], $27::bigint[]) as results`;

/** The upstream that served a call, as a finish item names it. */
export interface PersistRoute {
  reservationId: string;
  route?: { providerId: string; upstreamModel: string; attempts: number } | undefined;
}

/**
 * The items and routes as PERSIST_SQL's parameters (ids unique: a repeat would be charged twice).
 */
export function persistColumns(items: PersistItem[], routed: readonly PersistRoute[] = []): unknown[] {
  const routes = routed.flatMap(({ reservationId, route }) => (route ? [{ reservationId, ...route }] : []));
  const column = <T>(pick: (item: PersistItem) => T) => items.map(pick);
  const charges = items.flatMap((item, index) =>
    item.charges.map((charge) => ({
      call: index + 1,
      entitlementId: charge.entitlementId,
      amount: charge.amount,
    })),
  );
  return [
    column((item) => item.id),
    column((item) => item.account_id),
    column((item) => item.key_id),
    column((item) => item.alias),
    column((item) => item.surface),
    column((item) => item.status),
    column((item) => item.outcome),
    column((item) => item.http_status),
    column((item) => item.created_at),
    column((item) => item.estimate_input),
    column((item) => item.estimate_output),
    column((item) => JSON.stringify(item.legs)),
    column((item) => item.reserved_tokens),
    column((item) => item.reserved_credits),
    column((item) => item.input_tokens),
    column((item) => item.output_tokens),
    column((item) => item.charged_tokens),
    column((item) => item.charged_credits),
    column((item) => item.written_off_tokens),
    column((item) => item.written_off_credits),
    column((item) => item.lease_id),
    charges.map((charge) => charge.call),
    charges.map((charge) => charge.entitlementId),
    charges.map((charge) => charge.amount),
    column((item) => item.cache_read_tokens),
    column((item) => item.cache_write_tokens),
    column((item) => item.cache_write_1h_tokens),
    routes.map((route) => route.reservationId),
    routes.map((route) => route.providerId),
    routes.map((route) => route.upstreamModel),
    routes.map((route) => route.attempts),
  ];
}
