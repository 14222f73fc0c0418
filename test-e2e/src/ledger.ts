/**
 * Reads what the control plane recorded for an account, straight from Postgres: reservations,
 * their ledger rows and the balances, and checks they agree with each other and with the usage
 * the mock reported.
 *
 * Settlement is asynchronous by design: the gateway answers first and sends settles, releases
 * and holds to the control plane in batches off the response path. A client that has its answer
 * therefore cannot know when the ledger has it, so the meter polls the database (every 25 ms, for
 * at most 10 s) until the expected reservations are there, none is still `reserved` and the hot
 * tier holds none of the account's calls in Redis (its rows are written once a call has finished).
 */
import type pg from 'pg';
import { expect } from 'vitest';

export interface Reservation {
  id: string;
  alias: string;
  surface: string;
  status: 'reserved' | 'settled' | 'released' | 'held';
  outcome: string | null;
  httpStatus: number | null;
  /** Input read neither from nor into a cache; the cache parts beside it. */
  inputTokens: bigint | null;
  outputTokens: bigint | null;
  cacheReadTokens: bigint | null;
  cacheWriteTokens: bigint | null;
  cacheWrite1hTokens: bigint | null;
  reservedTokens: bigint;
  reservedCredits: bigint;
  chargedTokens: bigint;
  chargedCredits: bigint;
  writtenOffTokens: bigint;
  writtenOffCredits: bigint;
}

export interface Balances {
  credits: bigint;
  reservedCredits: bigint;
  tokens: bigint;
  reservedTokens: bigint;
}

const POLL_INTERVAL_MS = 25;
const POLL_DEADLINE_MS = 10_000;

const big = (value: string | null): bigint | null => (value === null ? null : BigInt(value));

async function readReservations(db: pg.Pool, accountId: string): Promise<Reservation[]> {
  const { rows } = await db.query(
    `select id, alias, surface, status, outcome, http_status, input_tokens::text, output_tokens::text,
            cache_read_tokens::text, cache_write_tokens::text, cache_write_1h_tokens::text, reserved_tokens::text, reserved_credits::text, charged_tokens::text, charged_credits::text,
            written_off_tokens::text, written_off_credits::text
     from reservations where account_id = $1 order by created_at, id`,
    [accountId],
  );
  return rows.map((row) => ({
    id: row.id,
    alias: row.alias,
    surface: row.surface,
    status: row.status,
    outcome: row.outcome,
    httpStatus: row.http_status,
    inputTokens: big(row.input_tokens),
    outputTokens: big(row.output_tokens),
    cacheReadTokens: big(row.cache_read_tokens),
    cacheWriteTokens: big(row.cache_write_tokens),
    cacheWrite1hTokens: big(row.cache_write_1h_tokens),
    reservedTokens: BigInt(row.reserved_tokens),
    reservedCredits: BigInt(row.reserved_credits),
    chargedTokens: BigInt(row.charged_tokens),
    chargedCredits: BigInt(row.charged_credits),
    writtenOffTokens: BigInt(row.written_off_tokens),
    writtenOffCredits: BigInt(row.written_off_credits),
  }));
}

/**
 * Balances as the account sees them once no call is in flight: what an open hot-tier lease holds
 * (money moved to `reserved` so Redis can spend it) counts as spendable again.
 */
export async function readBalances(db: pg.Pool, accountId: string): Promise<Balances> {
  const { rows } = await db.query(
    `with leased as (
       select p.entitlement_id, sum(p.leased - p.returned - p.spent - p.held) as amount
       from hot_leases l join hot_lease_parts p on p.lease_id = l.id
       where l.account_id = $1 and l.closed_at is null group by 1
     )
     select coalesce((select available from credit_balances where account_id = $1), 0)
              + coalesce((select amount from leased where entitlement_id is null), 0) as credits,
            coalesce((select reserved from credit_balances where account_id = $1), 0)
              - coalesce((select amount from leased where entitlement_id is null), 0) as reserved_credits,
            coalesce((select sum(remaining) from entitlements where account_id = $1), 0)
              + coalesce((select sum(amount) from leased where entitlement_id is not null), 0) as tokens,
            coalesce((select sum(reserved) from entitlements where account_id = $1), 0)
              - coalesce((select sum(amount) from leased where entitlement_id is not null), 0) as reserved_tokens`,
    [accountId],
  );
  const row = rows[0];
  return {
    credits: BigInt(row.credits),
    reservedCredits: BigInt(row.reserved_credits),
    tokens: BigInt(row.tokens),
    reservedTokens: BigInt(row.reserved_tokens),
  };
}

/** Sums of one reservation's ledger rows, tokens (entitlement rows) and credits apart. */
async function ledgerOf(db: pg.Pool, reservationId: string) {
  const { rows } = await db.query(
    `select (entitlement_id is null) as credit, kind, available_delta::text, reserved_delta::text
     from ledger_entries where reservation_id = $1`,
    [reservationId],
  );
  const sums = { tokens: { available: 0n, reserved: 0n }, credits: { available: 0n, reserved: 0n } };
  const kinds = new Set<string>();
  for (const row of rows) {
    const side = row.credit ? sums.credits : sums.tokens;
    side.available += BigInt(row.available_delta);
    side.reserved += BigInt(row.reserved_delta);
    kinds.add(row.kind);
  }
  return { ...sums, kinds };
}

/** What the meter reads: the database, and the calls the hot tier still holds in Redis. */
export type MeteredStack = { db: pg.Pool; callsInRedis(accountId: string): Promise<number> };

/**
 * Follows one account's reservations: `finished()` waits for the ones the last calls created and
 * checks that balances moved by exactly what those reservations charged (or still hold).
 */
export class Meter {
  private readonly seen = new Set<string>();
  private baseline: Balances | null = null;

  private readonly db: pg.Pool;
  private readonly stack: MeteredStack;
  readonly accountId: string;

  constructor(stack: MeteredStack, accountId: string) {
    this.db = stack.db;
    this.stack = stack;
    this.accountId = accountId;
  }

  /**
   * Remembers the reservations and balances as they are, once no reservation of the account is
   * still open (a call of an earlier test that failed half-way may still be settling).
   */
  async mark(): Promise<void> {
    const rows = await this.poll((all) => all, 'the open reservations to finish');
    for (const row of rows) this.seen.add(row.id);
    this.baseline = await readBalances(this.db, this.accountId);
  }

  /**
   * Reads the account's reservations (filtered by `select`) until none of them is `reserved` and
   * `ready` holds, polling every 25 ms for at most 10 s.
   */
  private async poll(
    select: (rows: Reservation[]) => Reservation[],
    what: string,
    ready: (rows: Reservation[]) => boolean = () => true,
  ): Promise<Reservation[]> {
    const deadline = Date.now() + POLL_DEADLINE_MS;
    for (;;) {
      // Redis first: a call the hot tier writes to Postgres after this read is in the rows read next.
      const inRedis = await this.stack.callsInRedis(this.accountId);
      const rows = select(await readReservations(this.db, this.accountId));
      if (ready(rows) && rows.every((row) => row.status !== 'reserved') && inRedis === 0) return rows;
      if (Date.now() > deadline) {
        throw new Error(
          `waited ${POLL_DEADLINE_MS} ms for ${what}; found ${JSON.stringify(rows.map((row) => row.status))}`,
        );
      }
      // The processes announce no settlement to the test (see above): read the ledger again.
      await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
    }
  }

  /** Reservations created since the last mark, as they are now. */
  async fresh(): Promise<Reservation[]> {
    return (await readReservations(this.db, this.accountId)).filter((row) => !this.seen.has(row.id));
  }

  /**
   * Waits until exactly `count` reservations were created since the last mark and none of them is
   * still `reserved`; checks the ledger and the balances against them, then marks again.
   */
  async finished(count = 1): Promise<Reservation[]> {
    const rows = await this.poll(
      (all) => all.filter((row) => !this.seen.has(row.id)),
      `${count} new reservations to finish`,
      (fresh) => fresh.length >= count,
    );
    expect(rows).toHaveLength(count);
    await this.checkMoney(rows);
    await this.mark();
    return rows;
  }

  /** Nothing was reserved since the last mark and no balance moved. */
  async expectUntouched(): Promise<void> {
    expect(await this.fresh()).toEqual([]);
    expect(await readBalances(this.db, this.accountId)).toEqual(this.baseline);
  }

  private async checkMoney(rows: Reservation[]): Promise<void> {
    if (!this.baseline) throw new Error('mark() the meter before the calls');
    const expected = { ...this.baseline };
    for (const row of rows) {
      const ledger = await ledgerOf(this.db, row.id);
      // What a call's own rows take out of the account, tokens and credits apart. In Postgres alone
      // the reservation moves money from available to reserved and its end moves it on; in the hot
      // tier the call drew from a lease (already in reserved) and its rows move only the charge.
      const out = {
        tokens: -(ledger.tokens.available + ledger.tokens.reserved),
        credits: -(ledger.credits.available + ledger.credits.reserved),
      };
      if (row.status === 'held') {
        // A hold keeps what was reserved, untouched, for reconciliation; nothing is charged.
        expect(row.chargedTokens + row.chargedCredits).toBe(0n);
        expect(out).toEqual({ tokens: 0n, credits: 0n });
        expect(ledger.kinds).toContain('hold');
        expected.tokens -= row.reservedTokens;
        expected.reservedTokens += row.reservedTokens;
        expected.credits -= row.reservedCredits;
        expected.reservedCredits += row.reservedCredits;
      } else {
        // Settled or released: exactly the charge left the account.
        expect(out).toEqual({ tokens: row.chargedTokens, credits: row.chargedCredits });
        if (row.status === 'released') expect(row.chargedTokens + row.chargedCredits).toBe(0n);
        expected.tokens -= row.chargedTokens;
        expected.credits -= row.chargedCredits;
      }
    }
    expect(await readBalances(this.db, this.accountId)).toEqual(expected);
  }
}

/** The credits a call costs at an alias's prices for the figures the model reported. */
export function creditCost(prices: { input: bigint; output: bigint }, input: number, output: number): bigint {
  return BigInt(input) * prices.input + BigInt(output) * prices.output;
}

/** Every input token a settled call used, whichever part (input, cache reads and writes). */
export function allInputTokens(row: Reservation): bigint {
  return (
    (row.inputTokens ?? 0n) +
    (row.cacheReadTokens ?? 0n) +
    (row.cacheWriteTokens ?? 0n) +
    (row.cacheWrite1hTokens ?? 0n)
  );
}

/**
 * Asserts a settlement charged exactly the reported figures in credits, nothing written off. The
 * e2e catalogue prices cache reads and writes at the input price (docs/pricing.md's defaults), so
 * every input token, whichever part, costs the input price.
 */
export function expectSettledInCredits(
  row: Reservation,
  prices: { input: bigint; output: bigint },
  usage: { input: number; output: number },
): void {
  expect(allInputTokens(row)).toBe(BigInt(usage.input));
  expect(row).toMatchObject({
    status: 'settled',
    outcome: 'ok',
    httpStatus: 200,
    outputTokens: BigInt(usage.output),
    chargedTokens: 0n,
    chargedCredits: creditCost(prices, usage.input, usage.output),
    writtenOffTokens: 0n,
    writtenOffCredits: 0n,
  });
}

/** Ends a test file: the control plane's own ledger check must pass, then every process stops. */
export async function closeCheckingLedger(
  stack: { admin(...args: string[]): Promise<unknown>; close(): Promise<void> } | undefined,
) {
  if (!stack) return;
  expect(await stack.admin('verify-ledger')).toEqual({ consistent: true, problems: [] });
  await stack.close();
}
