/**
 * The billing rulebook (docs/billing/rules.md) as plain TypeScript over bigint: one account, in
 * memory, no I/O, no time (an entitlement is expired or not). The differential test runs the same
 * operations against it and against each engine. Written for reading, not speed: where it and an
 * engine disagree, the rulebook decides which one is wrong.
 */

/** Credits per token of each usage part and per call paid from credit (R2). */
export interface FullPrice {
  input: bigint;
  output: bigint;
  cacheRead: bigint;
  cacheWrite: bigint;
  cacheWrite1h: bigint;
  request: bigint;
}
export type Price = FullPrice | null;

/** Prices as an operator may write them: the parts not given as in completePrice (docs/pricing.md). */
export function fullPrice(price: {
  input: bigint;
  output: bigint;
  cacheRead?: bigint;
  cacheWrite?: bigint;
  cacheWrite1h?: bigint;
  request?: bigint;
}): FullPrice {
  const cacheWrite = price.cacheWrite ?? price.input;
  return {
    input: price.input,
    output: price.output,
    cacheRead: price.cacheRead ?? price.input,
    cacheWrite,
    cacheWrite1h: price.cacheWrite1h ?? cacheWrite,
    request: price.request ?? 0n,
  };
}

/** A call's usage by part (R9); absent cache parts are zero. */
export interface ModelUsage {
  input: bigint;
  output: bigint;
  cacheRead?: bigint;
  cacheWrite?: bigint;
  cacheWrite1h?: bigint;
}

const min = (a: bigint, b: bigint) => (a < b ? a : b);

/** The order in which a package's tokens cover the parts (R9): input parts first, then output. */
const PART_ORDER = ['input', 'cacheWrite', 'cacheWrite1h', 'cacheRead', 'output'] as const;
type Part = (typeof PART_ORDER)[number];
type Parts = Record<Part, bigint>;

function partsOf(usage: ModelUsage): Parts {
  return {
    input: usage.input,
    cacheWrite: usage.cacheWrite ?? 0n,
    cacheWrite1h: usage.cacheWrite1h ?? 0n,
    cacheRead: usage.cacheRead ?? 0n,
    output: usage.output,
  };
}

const totalOf = (parts: Parts) => PART_ORDER.reduce((total, part) => total + parts[part], 0n);

/** Takes up to `amount` tokens from the parts in order; what was taken. */
function takeTokens(parts: Parts, amount: bigint): bigint {
  let left = amount;
  for (const part of PART_ORDER) {
    const take = min(parts[part], left);
    parts[part] -= take;
    left -= take;
  }
  return amount - left;
}

/** R9, R10: the parts at these prices; the call's price when any token is paid with credit. */
function costOf(parts: Parts, price: FullPrice): bigint {
  if (totalOf(parts) === 0n) return 0n;
  return PART_ORDER.reduce((cost, part) => cost + parts[part] * price[part], price.request);
}

/** R5: the highest price an input token may be charged at. */
function highestInput(price: FullPrice): bigint {
  let highest = price.input;
  for (const value of [price.cacheRead, price.cacheWrite, price.cacheWrite1h])
    if (value > highest) highest = value;
  return highest;
}

export interface ModelEntitlement {
  id: string;
  remaining: bigint;
  reserved: bigint;
  /** Days from the grant (null: never); only the order matters. */
  expiresInDays: number | null;
  /** Grant order, the tie-break after expiry (R4). */
  seq: number;
  aliases: string[] | null;
  expired: boolean;
  /** R2b: counts weighted units (a token costs its alias's package rate), not raw tokens. */
  weighted: boolean;
}

type Leg =
  | { source: 'entitlement'; id: string; amount: bigint; rate: bigint }
  | { source: 'credit'; amount: bigint; price: FullPrice };

export interface ModelReservation {
  id: string;
  alias: string;
  legs: Leg[];
  status: 'reserved' | 'held' | 'settled' | 'released';
  reservedTokens: bigint;
  reservedCredits: bigint;
  result?: FinishOutcome;
}

export type ReserveOutcome =
  | { ok: true; tokens: bigint; credits: bigint }
  | { ok: false; code: 'insufficient_tokens' | 'insufficient_credits' };

export interface FinishOutcome {
  status: 'settled' | 'released' | 'held';
  chargedTokens: bigint;
  chargedCredits: bigint;
  writtenOffTokens: bigint;
  writtenOffCredits: bigint;
}

const INT8_MAX = 9_223_372_036_854_775_807n;
const sum = (values: bigint[]) => values.reduce((total, value) => total + value, 0n);

export class MoneyModel {
  readonly entitlements: ModelEntitlement[] = [];
  readonly credit = { available: 0n, reserved: 0n };
  readonly reservations = new Map<string, ModelReservation>();
  /** What the ledger's `settle` rows charged per source ('credit' for credit), and write-offs. */
  readonly spent: Record<string, bigint> = {};

  /**
   * `holdsInCover`: whether held reservations count as reserved in R7's cover. Postgres counts
   * them; the hot tier does not (a held call leaves its lease). The rulebook leaves it open.
   */
  readonly coverPercent: bigint;
  readonly prices: Map<string, Price>;
  readonly holdsInCover: boolean;
  /** R2b: each alias's package rate, units of a weighted entitlement per token (absent: 1). */
  readonly rates: Map<string, bigint>;

  constructor(
    coverPercent: bigint,
    prices: Map<string, Price>,
    holdsInCover = true,
    rates = new Map<string, bigint>(),
  ) {
    this.coverPercent = coverPercent;
    this.prices = prices;
    this.holdsInCover = holdsInCover;
    this.rates = rates;
  }

  /** R2b: units of this entitlement one token of the alias costs now. */
  private unitRate(entitlement: ModelEntitlement, alias: string): bigint {
    return entitlement.weighted ? (this.rates.get(alias) ?? 1n) : 1n;
  }

  /** What held reservations keep aside, in tokens and in credits. */
  private held(): { tokens: bigint; credits: bigint } {
    const held = [...this.reservations.values()].filter((reservation) => reservation.status === 'held');
    return {
      tokens: sum(
        held.flatMap((r) => r.legs.filter((leg) => leg.source === 'entitlement').map((leg) => leg.amount)),
      ),
      credits: sum(
        held.flatMap((r) => r.legs.filter((leg) => leg.source === 'credit').map((leg) => leg.amount)),
      ),
    };
  }

  // Balances outside calls (R15-R17).

  grantEntitlement(
    id: string,
    tokens: bigint,
    expiresInDays: number | null,
    aliases: string[] | null,
    weighted = false,
  ): void {
    const seq = this.entitlements.length;
    this.entitlements.push({
      id,
      remaining: tokens,
      reserved: 0n,
      expiresInDays,
      seq,
      aliases,
      expired: false,
      weighted,
    });
  }

  /** A credit grant or adjustment; false (nothing changes) when it would go below zero. */
  changeCredit(delta: bigint): boolean {
    if (this.credit.available + delta < 0n) return false;
    this.credit.available += delta;
    return true;
  }

  expire(id: string): void {
    this.entitlement(id).expired = true;
  }

  /** R17: the tokens left are taken back and the entitlement ends; calls in flight keep theirs. */
  refund(id: string): void {
    const entitlement = this.entitlement(id);
    entitlement.remaining = 0n;
    entitlement.expired = true;
  }

  // Reserving (R3-R8).

  private entitlement(id: string): ModelEntitlement {
    const found = this.entitlements.find((entitlement) => entitlement.id === id);
    if (!found) throw new Error(`no entitlement ${id}`);
    return found;
  }

  private covers(entitlement: ModelEntitlement, alias: string): boolean {
    return !entitlement.expired && (entitlement.aliases === null || entitlement.aliases.includes(alias));
  }

  /** R3, R4: usable entitlements in draw order (R2b: a weighted one while it has a whole token). */
  drawOrder(alias: string): ModelEntitlement[] {
    return this.entitlements
      .filter(
        (entitlement) =>
          entitlement.remaining > 0n &&
          entitlement.remaining >= this.unitRate(entitlement, alias) &&
          this.covers(entitlement, alias),
      )
      .sort(
        (a, b) =>
          (a.expiresInDays ?? Number.POSITIVE_INFINITY) - (b.expiresInDays ?? Number.POSITIVE_INFINITY) ||
          a.seq - b.seq,
      );
  }

  /** R4, R2b: per entitlement, the tokens it covers towards `need` and its rate (units per token). */
  private plan(
    alias: string,
    need: bigint,
  ): Array<{ entitlement: ModelEntitlement; tokens: bigint; rate: bigint }> {
    const takes: Array<{ entitlement: ModelEntitlement; tokens: bigint; rate: bigint }> = [];
    let left = need;
    for (const entitlement of this.drawOrder(alias)) {
      if (left === 0n) break;
      const rate = this.unitRate(entitlement, alias);
      const tokens = min(left, entitlement.remaining / rate);
      takes.push({ entitlement, tokens, rate });
      left -= tokens;
    }
    return takes;
  }

  reserve(id: string, alias: string, input: bigint, output: bigint): ReserveOutcome {
    const existing = this.reservations.get(id);
    // R8: a repeat, or a reserve after its release: what it holds.
    if (existing) return { ok: true, tokens: existing.reservedTokens, credits: existing.reservedCredits };
    const need = input + output;
    const takes = this.plan(alias, need);
    const tokens = sum(takes.map((take) => take.tokens));
    const units = sum(takes.map((take) => take.tokens * take.rate));
    const price = this.prices.get(alias) ?? null;
    let credit = 0n;
    if (tokens < need) {
      // R5: entitlement tokens cover input first; credit pays the rest at today's prices, the input
      // at the highest input price (its parts are known only from the answer), plus the call's price.
      const coveredIn = min(tokens, input);
      const cost = price
        ? (input - coveredIn) * highestInput(price) +
          (output - (tokens - coveredIn)) * price.output +
          price.request
        : 0n;
      if (!price || cost > this.credit.available) return { ok: false, code: this.shortfall(alias) };
      credit = cost;
    }
    // R7: with calls open in a pool, leave the cover.
    const cover = this.coverPercent;
    const held = this.holdsInCover ? { tokens: 0n, credits: 0n } : this.held();
    if (cover > 0n && units > 0n) {
      // In the entitlements' units (R2b).
      const reserved = sum(this.entitlements.map((entitlement) => entitlement.reserved)) - held.tokens;
      const available = sum(this.drawOrder(alias).map((entitlement) => entitlement.remaining));
      if (reserved > 0n && (available - units) * 100n < cover * (reserved + units)) {
        return { ok: false, code: 'insufficient_tokens' };
      }
    }
    if (cover > 0n && credit > 0n) {
      const available = this.credit.available;
      const reserved = this.credit.reserved - held.credits;
      if (reserved > 0n && (available - credit) * 100n < cover * (reserved + credit)) {
        return { ok: false, code: 'insufficient_credits' };
      }
    }
    const legs: Leg[] = [];
    for (const { entitlement, tokens: covered, rate } of takes) {
      entitlement.remaining -= covered * rate;
      entitlement.reserved += covered * rate;
      legs.push({ source: 'entitlement', id: entitlement.id, amount: covered * rate, rate });
    }
    if (credit > 0n && price) {
      this.credit.available -= credit;
      this.credit.reserved += credit;
      legs.push({ source: 'credit', amount: credit, price: { ...price } });
    }
    this.reservations.set(id, {
      id,
      alias,
      legs,
      status: 'reserved',
      reservedTokens: units,
      reservedCredits: credit,
    });
    return { ok: true, tokens: units, credits: credit };
  }

  /** R6 */
  private shortfall(alias: string): 'insufficient_tokens' | 'insufficient_credits' {
    const priced = (this.prices.get(alias) ?? null) !== null;
    const holdsOne = this.entitlements.some((entitlement) => this.covers(entitlement, alias));
    return !priced || holdsOne ? 'insufficient_tokens' : 'insufficient_credits';
  }

  // Finishing (R9-R14).

  private charge(source: string, amount: bigint): void {
    if (amount > 0n) this.spent[source] = (this.spent[source] ?? 0n) + amount;
  }

  /** R12, R13, R14: release or hold; `alias` names a reservation never seen (a tombstone). */
  end(id: string, action: 'release' | 'hold', alias: string): FinishOutcome {
    const reservation = this.reservations.get(id) ?? this.tombstone(id, alias);
    const target = action === 'release' ? 'released' : 'held';
    const final = reservation.status === 'settled' || reservation.status === 'released';
    if (!final && reservation.status !== target) {
      if (action === 'release') this.returnLegs(reservation);
      reservation.status = target;
      reservation.result = this.nothing(target);
    }
    return reservation.result ?? this.nothing(reservation.status as FinishOutcome['status']);
  }

  private tombstone(id: string, alias: string): ModelReservation {
    const reservation: ModelReservation = {
      id,
      alias,
      legs: [],
      status: 'reserved',
      reservedTokens: 0n,
      reservedCredits: 0n,
    };
    this.reservations.set(id, reservation);
    return reservation;
  }

  private nothing(status: FinishOutcome['status']): FinishOutcome {
    return { status, chargedTokens: 0n, chargedCredits: 0n, writtenOffTokens: 0n, writtenOffCredits: 0n };
  }

  private returnLegs(reservation: ModelReservation): void {
    for (const leg of reservation.legs) {
      const pool = leg.source === 'credit' ? this.credit : this.entitlement(leg.id);
      pool.reserved -= leg.amount;
      if (leg.source === 'credit') this.credit.available += leg.amount;
      else this.entitlement(leg.id).remaining += leg.amount;
    }
  }

  /** R9, R10, R11, R14. `alias` is used for a reservation never seen (R11). */
  settle(id: string, alias: string, usage: ModelUsage): FinishOutcome {
    const reservation = this.reservations.get(id) ?? this.tombstone(id, alias);
    if (reservation.status === 'settled') return reservation.result!;
    const rest = partsOf(usage);
    let tokens = 0n;
    let credits = 0n;
    let extra = 0n;
    if (reservation.status === 'reserved' || reservation.status === 'held') {
      for (const leg of reservation.legs) {
        if (leg.source === 'entitlement') {
          // R2b: whole tokens at the rate of reservation time.
          const entitlement = this.entitlement(leg.id);
          const take = takeTokens(rest, leg.amount / leg.rate) * leg.rate;
          entitlement.reserved -= leg.amount;
          entitlement.remaining += leg.amount - take;
          this.charge(leg.id, take);
          tokens += take;
        } else {
          // Each part at the prices of reservation time, up to the leg; the rest is owed beyond it.
          const cost = costOf(rest, leg.price);
          const take = min(cost, leg.amount);
          this.credit.reserved -= leg.amount;
          this.credit.available += leg.amount - take;
          this.charge('credit', take);
          credits += take;
          extra = cost - take;
          takeTokens(rest, totalOf(rest));
        }
      }
    }
    // R10: beyond the reservation, from what is left now; the rest is written off.
    let owed = extra;
    let offTokens = 0n;
    if (totalOf(rest) > 0n) {
      for (const { entitlement, tokens: covered, rate } of this.plan(reservation.alias, totalOf(rest))) {
        takeTokens(rest, covered);
        const take = covered * rate;
        entitlement.remaining -= take;
        this.charge(entitlement.id, take);
        tokens += take;
      }
      const price = this.prices.get(reservation.alias) ?? null;
      if (price) owed += costOf(rest, price);
      else offTokens = totalOf(rest);
    }
    let offCredits = 0n;
    if (owed > 0n) {
      const take = min(owed, this.credit.available);
      this.credit.available -= take;
      this.charge('credit', take);
      credits += take;
      offCredits = min(owed - take, INT8_MAX);
    }
    this.charge('writeOff:tokens', offTokens);
    this.charge('writeOff:credits', offCredits);
    reservation.status = 'settled';
    reservation.result = {
      status: 'settled',
      chargedTokens: tokens,
      chargedCredits: credits,
      writtenOffTokens: offTokens,
      writtenOffCredits: offCredits,
    };
    return reservation.result;
  }

  /** Each source's spendable and reserved figures, as the test reads them from an engine. */
  sources(): Record<string, { remaining: bigint; reserved: bigint }> {
    const sources: Record<string, { remaining: bigint; reserved: bigint }> = {};
    for (const entitlement of this.entitlements) {
      sources[entitlement.id] = { remaining: entitlement.remaining, reserved: entitlement.reserved };
    }
    sources.credit = { remaining: this.credit.available, reserved: this.credit.reserved };
    return sources;
  }
}
