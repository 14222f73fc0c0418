/**
 * Crashes under load, each as real processes and many concurrent clients: `kill -9` of the control
 * plane (then a new one on the same database and port), `kill -9` of a gateway, and a Redis of the
 * test's own killed and started again empty. After each: no settled money lost, nothing charged
 * twice, `verify-ledger` consistent, no balance below zero, and what the crash cost stays within
 * the bound the README states ("What a crash can cost at most").
 *
 * Every call asks the mock to report a usage unique to it (input tokens = 10 + call number), so a
 * reservation's recorded usage names the client call it belongs to: the test maps each answer the
 * client got to the settlement the ledger holds for it. The control plane runs its hot tier on
 * the test's Redis: calls in flight are there (and only there) until they finish.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { run } from '@tollgate/test-harness';
import { Redis } from 'ioredis';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openaiClient } from '../src/clients.ts';
import { signUpCustomer } from '../src/customer.ts';
import { creditCost, readBalances } from '../src/ledger.ts';
import { type OwnRedis, startOwnRedis } from '../src/redis-server.ts';
import { type E2EStack, PRICES, startStack } from '../src/stack.ts';

const GRANT = 100_000_000n;
const OUTPUT_TOKENS = 2;
/** Input tokens the mock reports for call number `index`. */
const inputOf = (index: number) => 10 + index;
const costOf = (index: number) => creditCost(PRICES['gpt-e2e'], inputOf(index), OUTPUT_TOKENS);
/** Bound on the calls one load run makes, whatever the timing. */
const MAX_CALLS = 3_000;

let redis: OwnRedis;
let stack: E2EStack;

beforeAll(async () => {
  redis = await startOwnRedis();
  stack = await startStack('crash-recovery', {
    redisUrl: redis.url,
    controlPlaneEnv: {
      KEY_MAX_CONCURRENCY: '64',
      KEY_MAX_REQUESTS_PER_MINUTE: '1000000',
      // The test runs the reconcile pass itself (the CLI), so that it sees what the pass changed.
      RECONCILE_INTERVAL_SECONDS: '3600',
    },
  });
});

afterAll(async () => {
  if (stack) expect(await stack.admin('verify-ledger')).toEqual({ consistent: true, problems: [] });
  await stack?.close();
  await redis?.stop();
});

interface Outcome {
  index: number;
  worker: number;
  /** HTTP status; 0 when no answer came at all (the connection was cut). */
  status: number;
  code?: string;
  startedAt: number;
  endedAt: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function call(client: OpenAI, index: number, worker: number, delayMs: number): Promise<Outcome> {
  const startedAt = Date.now();
  try {
    await client.chat.completions.create({
      model: 'gpt-e2e',
      max_tokens: 8,
      messages: [
        {
          role: 'user',
          content: `crash ${index} @mock(delay=${delayMs},input_tokens=${inputOf(index)},output_tokens=${OUTPUT_TOKENS})`,
        },
      ],
    });
    return { index, worker, status: 200, startedAt, endedAt: Date.now() };
  } catch (error) {
    const failure = error as { status?: number; code?: string };
    return {
      index,
      worker,
      status: failure.status ?? 0,
      ...(failure.code ? { code: failure.code } : {}),
      startedAt,
      endedAt: Date.now(),
    };
  }
}

/**
 * `workers` clients, each calling one after the other until stopped (or, with `stopOnNoAnswer`,
 * until its connection is cut). Call numbers start at `first`.
 */
function startLoad(client: OpenAI, options: { workers: number; delayMs: number; first: number }) {
  const outcomes: Outcome[] = [];
  let next = options.first;
  let stopped = false;
  const worker = async (id: number) => {
    while (!stopped && next < options.first + MAX_CALLS) {
      const outcome = await call(client, next++, id, options.delayMs);
      outcomes.push(outcome);
      // A worker whose gateway is gone has nothing left to call.
      if (outcome.status === 0) return;
      // Refusals come back at once: a short pause keeps an outage from becoming a busy loop.
      if (outcome.status !== 200) await sleep(20);
    }
  };
  const running = Promise.all(Array.from({ length: options.workers }, (_, id) => worker(id)));
  return {
    outcomes,
    async stop(): Promise<Outcome[]> {
      stopped = true;
      await running;
      return outcomes;
    },
  };
}

const tally = (outcomes: Outcome[]) => {
  const counts: Record<string, number> = {};
  for (const outcome of outcomes) {
    const label =
      outcome.status === 200
        ? 'ok'
        : outcome.status === 0
          ? 'no answer'
          : `${outcome.status} ${outcome.code ?? ''}`.trim();
    counts[label] = (counts[label] ?? 0) + 1;
  }
  return counts;
};

interface Row {
  id: string;
  status: 'reserved' | 'settled' | 'released' | 'held';
  /** The client call the reservation belongs to (from its reported usage); null without usage. */
  index: number | null;
  reservedCredits: bigint;
  chargedCredits: bigint;
  holdReason: string | null;
  /** What its own credit ledger rows took out of the account (available and reserved together). */
  out: bigint;
  /** How many of them settle, and how many hold. */
  settleRows: number;
  holdRows: number;
}

async function readRows(accountId: string): Promise<Row[]> {
  const { rows } = await stack.db.query(
    `select r.id, r.status, r.input_tokens::text, r.reserved_credits::text, r.charged_credits::text,
            r.hold_reason,
            (-coalesce(sum(l.available_delta + l.reserved_delta), 0))::text as out,
            count(l.id) filter (where l.kind = 'settle')::int as settle_rows,
            count(l.id) filter (where l.kind = 'hold')::int as hold_rows
     from reservations r
     left join ledger_entries l on l.reservation_id = r.id and l.entitlement_id is null
     where r.account_id = $1
     group by r.id`,
    [accountId],
  );
  return rows.map((row) => ({
    id: row.id,
    status: row.status,
    index: row.input_tokens === null ? null : Number(row.input_tokens) - 10,
    reservedCredits: BigInt(row.reserved_credits),
    chargedCredits: BigInt(row.charged_credits),
    holdReason: row.hold_reason,
    out: BigInt(row.out),
    settleRows: row.settle_rows,
    holdRows: row.hold_rows,
  }));
}

/**
 * Waits (at most 30 s) until no call of the account is open (in flight in Redis, or finished and
 * not yet written) and at least `count` are written; its rows then.
 */
async function waitUntilNoneOpen(accountId: string, count = 0): Promise<Row[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    // Redis first: a call the hot tier writes to Postgres after this read is in the rows read next.
    const inRedis = await stack.callIdsInRedis(accountId);
    const rows = await readRows(accountId);
    // A finished call Redis still holds after its write is not open: a control plane killed before
    // Redis forgot it leaves it there until the reconciler's pass (docs/billing/hot-tier.md).
    const final = new Set(rows.filter((row) => row.status !== 'reserved').map((row) => row.id));
    const open =
      rows.filter((row) => row.status === 'reserved').length + inRedis.filter((id) => !final.has(id)).length;
    if (open === 0 && rows.length >= count) return rows;
    if (Date.now() > deadline)
      throw new Error(`${open} calls still open after 30 s (${rows.length} written)`);
    // The processes announce no settlement to the test: read Redis and the rows again.
    await sleep(100);
  }
}

/** The account's calls in flight in the hot tier (its Redis `calls` hash, R entries): id -> entry. */
async function inFlightInRedis(accountId: string): Promise<Map<string, string>> {
  const client = new Redis(redis.url);
  try {
    const calls = await client.hgetall(stack.hotCallsKey(accountId));
    return new Map(Object.entries(calls).filter(([, value]) => value.startsWith('R|')));
  } finally {
    client.disconnect();
  }
}

/** Makes the calls in flight look a day old to the reconcile pass (as RESERVATION_TIMEOUT_MINUTES passing would). */
async function ageInFlight(accountId: string): Promise<void> {
  const client = new Redis(redis.url);
  try {
    const key = stack.hotCallsKey(accountId);
    for (const [id, value] of await inFlightInRedis(accountId)) {
      const fields = value.split('|');
      fields[4] = String(BigInt(fields[4]!) - 86_400_000_000n);
      await client.hset(key, id, fields.join('|'));
    }
  } finally {
    client.disconnect();
  }
}

/** Served again after a restart, without touching the other services: every worker's last call. */
function expectEveryWorkerServedAfter(outcomes: Outcome[], workers: number, restartedAt: number): void {
  for (let id = 0; id < workers; id++) {
    const last = outcomes.filter((outcome) => outcome.worker === id).at(-1);
    expect(last?.status, `worker ${id}`).toBe(200);
    expect(last!.startedAt).toBeGreaterThan(restartedAt);
  }
}

/** Every call answered 200 is among the settled ones, and nothing else is (settled by call number). */
function expectAnsweredSettledOnce(outcomes: Outcome[], settled: Map<number, Row>): void {
  const answered = outcomes.filter((outcome) => outcome.status === 200).map((outcome) => outcome.index);
  expect([...settled.keys()].sort((a, b) => a - b)).toEqual(answered.sort((a, b) => a - b));
}

/**
 * The money checks every fault must pass: each reservation's credit ledger rows match its status
 * (settled: exactly its charge left the account; released: nothing; held: its reserve kept aside),
 * each call number is settled at most once and at its own price, the balance is the grant minus
 * the charges (and what holds keep aside), and the account's running balance never went below
 * zero. Returns the settled rows by call number.
 */
async function expectMoneyAddsUp(accountId: string, rows: Row[]): Promise<Map<number, Row>> {
  const settled = new Map<number, Row>();
  let charged = 0n;
  let held = 0n;
  for (const row of rows) {
    if (row.status === 'settled') {
      expect(row.index, `settled reservation ${row.id} without usage`).not.toBeNull();
      const index = row.index as number;
      expect(settled.has(index), `call ${index} settled twice`).toBe(false);
      settled.set(index, row);
      expect(row.chargedCredits).toBe(costOf(index));
      expect(row.settleRows).toBeGreaterThan(0);
      expect(row.out).toBe(row.chargedCredits);
      charged += row.chargedCredits;
    } else if (row.status === 'released') {
      expect({ charged: row.chargedCredits, out: row.out }).toEqual({ charged: 0n, out: 0n });
    } else if (row.status === 'held') {
      // Kept aside for review: nothing charged, nothing left the account.
      expect({ charged: row.chargedCredits, out: row.out }).toEqual({ charged: 0n, out: 0n });
      if (row.reservedCredits > 0n) expect(row.holdRows).toBeGreaterThan(0);
      held += row.reservedCredits;
    } else {
      throw new Error(`reservation ${row.id} is still open`);
    }
  }
  expect(await readBalances(stack.db, accountId)).toMatchObject({
    credits: GRANT - charged - held,
    reservedCredits: held,
  });
  const { rows: lowest } = await stack.db.query<{ lowest: string }>(
    `select coalesce(min(running), 0)::text as lowest from (
       select sum(available_delta) over (order by id) as running
       from ledger_entries where account_id = $1 and entitlement_id is null) balances`,
    [accountId],
  );
  expect(BigInt(lowest[0]!.lowest)).toBeGreaterThanOrEqual(0n);
  expect(await stack.admin('verify-ledger')).toEqual({ consistent: true, problems: [] });
  return settled;
}

async function loadCustomer(name: string) {
  const customer = await signUpCustomer(stack, { credits: GRANT });
  const { secret } = await customer.createKey({
    name,
    limits: { concurrency: 64, requestsPerMinute: 1_000_000 },
  });
  return { accountId: customer.accountId, secret };
}

describe('kill -9 of the control plane under load', () => {
  it('refuses with billing_unavailable during the outage, serves after the restart, and settles every answered call exactly once', {
    timeout: 90_000,
  }, async () => {
    const { accountId, secret } = await loadCustomer('control plane crash');
    const client = openaiClient(stack.gatewayUrl, secret);
    // Warm the gateway's key cache: during the outage the refusal must come from billing.
    const warm = await call(client, 0, -1, 0);
    expect(warm.status).toBe(200);

    const workers = 8;
    const load = startLoad(client, { workers, delayMs: 50, first: 1 });
    // Real time is the thing tested from here: a second of load, an outage, load after the restart.
    await sleep(1_000);
    const killedAt = Date.now();
    await stack.killControlPlane();
    await sleep(1_500); // the outage
    await stack.startControlPlane();
    const restartedAt = Date.now();
    await sleep(2_000); // load after the restart
    const outcomes = [warm, ...(await load.stop())];

    const counts = tally(outcomes);
    expect(Object.keys(counts).sort(), JSON.stringify(counts)).toEqual(['503 billing_unavailable', 'ok']);
    const refused = outcomes.filter((outcome) => outcome.status !== 200);
    expect(refused.every((outcome) => outcome.endedAt >= killedAt)).toBe(true);
    // Served again after the restart, without touching the gateway: every worker's last call.
    expectEveryWorkerServedAfter(outcomes, workers, restartedAt);

    // The gateway delivers what it queued during the outage; then nothing is left open.
    const rows = await waitUntilNoneOpen(
      accountId,
      outcomes.filter((outcome) => outcome.status === 200).length,
    );
    const settled = await expectMoneyAddsUp(accountId, rows);
    // Every call answered 200 is settled, once, at its price; no refused call costs anything.
    expectAnsweredSettledOnce(outcomes, settled);
    // What the outage left: reserves committed (or not) whose answer was lost are released.
    const released = rows.filter((row) => row.status === 'released');
    expect(rows.filter((row) => row.status === 'held')).toEqual([]);
    expect(released.length).toBeLessThanOrEqual(refused.length);
    console.info(
      `control plane kill -9: ${JSON.stringify(counts)}, ${settled.size} settled, ${released.length} released`,
    );
  });
});

describe('kill -9 of a gateway under load', () => {
  it('keeps what was settled; the calls in flight (and unflushed settlements) end held as settlement_missing, nothing charged twice', {
    timeout: 90_000,
  }, async () => {
    const { accountId, secret } = await loadCustomer('gateway crash');
    // A long flush interval makes the second part of the bound visible: settlements of calls
    // answered in the last FINISH_FLUSH_MS before the kill are still in the victim's memory.
    const flushMs = 300;
    const victim = await stack.startGateway('victim', {
      FINISH_FLUSH_MS: String(flushMs),
      LOG_LEVEL: 'warn',
    });
    const client = openaiClient(victim.url, secret);
    const workers = 6;
    // Most of each call is spent upstream: at the kill, (nearly) every worker has one in flight.
    const load = startLoad(client, { workers, delayMs: 300, first: 10_000 });
    // Real time: two seconds of load before the kill.
    await sleep(2_000);
    const killedAt = Date.now();
    victim.service.child.kill('SIGKILL');
    // Each worker stops at its first call without an answer; the bound on the wait is the
    // client's own timeout.
    const outcomes = await Promise.race([
      (async () => {
        // The outcomes are an array the workers fill: look again until each worker has its last.
        while (load.outcomes.filter((outcome) => outcome.status === 0).length < workers) await sleep(50);
        return load.stop();
      })(),
      sleep(25_000).then(() => load.stop()), // the give-up deadline
    ]);

    const counts = tally(outcomes);
    expect(Object.keys(counts).sort(), JSON.stringify(counts)).toEqual(['no answer', 'ok']);
    const noAnswer = outcomes.filter((outcome) => outcome.status === 0);
    const answered = outcomes.filter((outcome) => outcome.status === 200);
    // Calls in flight at the kill: one per worker at most, and they are what got no answer.
    expect(noAnswer.length).toBeGreaterThan(0);
    expect(noAnswer.length).toBeLessThanOrEqual(workers);
    expect(noAnswer.every((outcome) => outcome.endedAt >= killedAt)).toBe(true);
    // (An answer already on its way may be read a moment after the kill, on this busy box.)
    expect(answered.every((outcome) => outcome.endedAt <= killedAt + 3_000)).toBe(true);

    // Finishes the victim sent just before it died may still be landing: wait until what the
    // account has in flight in Redis, and its rows, stop changing.
    const snapshot = async () => ({
      inFlight: [...(await inFlightInRedis(accountId)).keys()].sort(),
      rows: (await readRows(accountId)).map((row) => `${row.id}:${row.status}`).sort(),
    });
    let seen = await snapshot();
    for (let stable = 0, rounds = 0; stable < 3 && rounds < 100; rounds++) {
      // A dead gateway cannot say it has nothing more on the way: stable for three reads is done.
      await sleep(200);
      const now = await snapshot();
      stable = JSON.stringify(now) === JSON.stringify(seen) ? stable + 1 : 0;
      seen = now;
    }
    const rows = await readRows(accountId);
    const open = seen.inFlight;
    const settledIndexes = new Set(rows.flatMap((row) => (row.status === 'settled' ? [row.index] : [])));
    const unsettledAnswers = answered.filter((outcome) => !settledIndexes.has(outcome.index));
    // What was settled before the kill stays settled; an answered call can lack its settlement
    // only if it ended within the flush interval (plus this busy box's scheduling) before the kill.
    for (const outcome of unsettledAnswers) {
      expect(outcome.endedAt, `call ${outcome.index}`).toBeGreaterThan(killedAt - flushMs - 2_000);
    }
    // Each open reservation is a call in flight or an answered call whose settlement was lost.
    expect(open.length).toBeGreaterThanOrEqual(unsettledAnswers.length);
    expect(open.length).toBeLessThanOrEqual(noAnswer.length + unsettledAnswers.length);

    // RESERVATION_TIMEOUT_MINUTES passes (the calls are aged rather than the test waiting for it),
    // then the reconcile pass holds exactly the open reservations, none released unseen.
    await ageInFlight(accountId);
    const pass = await stack.admin('reconcile');
    const mine = pass.reservations.filter((change: { accountId: string }) => change.accountId === accountId);
    expect(mine).toHaveLength(open.length);
    expect(
      mine.every(
        (change: { action: string; reason: string }) =>
          change.action === 'hold' && change.reason === 'settlement_missing',
      ),
    ).toBe(true);

    const after = await readRows(accountId);
    const held = after.filter((row) => row.status === 'held');
    expect(held.map((row) => row.id).sort()).toEqual(open);
    expect(held.every((row) => row.holdReason === 'settlement_missing')).toBe(true);
    const settled = await expectMoneyAddsUp(accountId, after);
    // Nothing settled that no client called; every settled call was answered or in flight.
    const called = new Set([...answered, ...noAnswer].map((outcome) => outcome.index));
    expect([...settled.keys()].every((index) => called.has(index))).toBe(true);
    // The bound: unbilled calls <= calls in flight at the kill + settlements not yet flushed.
    expect(held.length).toBeLessThanOrEqual(noAnswer.length + unsettledAnswers.length);
    console.info(
      `gateway kill -9: ${JSON.stringify(counts)}, ${settled.size} settled, ${held.length} held ` +
        `(${noAnswer.length} in flight, ${unsettledAnswers.length} answered but not yet flushed)`,
    );
  });
});

/** Waits (at most 15 s) until `count` calls of the account hold a reservation: they are under way. */
async function waitReserved(accountId: string, count: number): Promise<void> {
  const deadline = Date.now() + 15_000;
  while ((await inFlightInRedis(accountId)).size < count) {
    if (Date.now() > deadline) throw new Error(`${count} calls did not get under way`);
    // Another process's calls: read the hot tier's hash again.
    await sleep(50);
  }
}

/** Waits (at most 15 s) until the gateway's limiter answers again: one call on `client` is served. */
async function waitServed(client: OpenAI, index: number): Promise<Outcome> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const outcome = await call(client, index, -1, 0);
    if (outcome.status === 200 || Date.now() > deadline) return outcome;
    // The limiter reconnects on its own schedule and says so to no one: call again.
    await sleep(100);
  }
}

describe('a Redis restart under load', () => {
  it('refuses with rate_limiter_unavailable while Redis is gone, serves again without a service restart, and loses no money', {
    timeout: 90_000,
  }, async () => {
    const { accountId, secret } = await loadCustomer('redis restart');
    const client = openaiClient(stack.gatewayUrl, secret);
    const workers = 8;
    const load = startLoad(client, { workers, delayMs: 50, first: 20_000 });
    // Real time is the thing tested from here: a second of load, an outage, load after the restart.
    await sleep(1_000);
    const killedAt = Date.now();
    await redis.kill();
    await sleep(1_500); // the outage
    await redis.start();
    const restartedAt = Date.now();
    await sleep(3_000); // load after the restart
    const outcomes = await load.stop();

    const counts = tally(outcomes);
    expect(Object.keys(counts).sort(), JSON.stringify(counts)).toEqual([
      '503 rate_limiter_unavailable',
      'ok',
    ]);
    expect(
      outcomes.filter((outcome) => outcome.status !== 200).every((outcome) => outcome.endedAt >= killedAt),
    ).toBe(true);
    expectEveryWorkerServedAfter(outcomes, workers, restartedAt);

    const rows = await waitUntilNoneOpen(
      accountId,
      outcomes.filter((outcome) => outcome.status === 200).length,
    );
    const settled = await expectMoneyAddsUp(accountId, rows);
    // Refused before any reservation: the outage cost nothing and every answered call is billed.
    expectAnsweredSettledOnce(outcomes, settled);
    expect(rows.filter((row) => row.status !== 'settled')).toEqual([]);
    console.info(`redis kill -9 and restart: ${JSON.stringify(counts)}, ${settled.size} settled`);
  });

  it('starts concurrency leases and rate windows afresh: a key briefly gets up to twice its concurrency, and its window once more', {
    timeout: 90_000,
  }, async () => {
    const customer = await signUpCustomer(stack, { credits: GRANT });
    const concurrency = 2;
    const narrow = openaiClient(
      stack.gatewayUrl,
      (await customer.createKey({ name: 'narrow', limits: { concurrency, requestsPerMinute: 1_000 } }))
        .secret,
    );
    const rpm = 3;
    const windowed = openaiClient(
      stack.gatewayUrl,
      (await customer.createKey({ name: 'windowed', limits: { concurrency: 8, requestsPerMinute: rpm } }))
        .secret,
    );
    const probe = openaiClient(
      stack.gatewayUrl,
      (await customer.createKey({ name: 'probe', limits: { concurrency: 8, requestsPerMinute: 1_000 } }))
        .secret,
    );
    const statuses = (outcomes: Outcome[]) => tally(outcomes);

    // The window of `windowed` is used up before the restart.
    const before: Outcome[] = [];
    for (let index = 0; index <= rpm; index++) before.push(await call(windowed, 30_000 + index, 0, 0));
    expect(statuses(before)).toEqual({ ok: rpm, '429 rate_limit_exceeded': 1 });

    // `narrow` has its two slots taken by long calls, and a third is refused.
    // (Earlier calls settled first, so that the open reservations counted below are these.)
    await waitUntilNoneOpen(customer.accountId);
    const old = Array.from({ length: concurrency }, (_, index) => call(narrow, 31_000 + index, index, 8_000));
    await waitReserved(customer.accountId, concurrency);
    expect(statuses([await call(narrow, 31_100, 9, 0)])).toEqual({ '429 concurrency_limit_exceeded': 1 });

    await redis.kill();
    await redis.start();
    expect((await waitServed(probe, 32_000)).status).toBe(200);

    // Redis came back empty: the old calls still run, yet their slots are free again.
    const fresh = await Promise.all(
      Array.from({ length: concurrency + 1 }, (_, index) => call(narrow, 31_200 + index, index, 1_000)),
    );
    expect(statuses(fresh)).toEqual({ ok: concurrency, '429 concurrency_limit_exceeded': 1 });
    const oldOutcomes = await Promise.all(old);
    expect(statuses(oldOutcomes)).toEqual({ ok: concurrency });
    // The bound: twice the concurrency at most, and only while the old calls were still running.
    const admittedFresh = fresh.filter((outcome) => outcome.status === 200);
    expect(admittedFresh.every((fresh) => oldOutcomes.every((old) => old.endedAt > fresh.startedAt))).toBe(
      true,
    );
    // Once they have finished, the ceiling is the key's own again.
    await waitUntilNoneOpen(customer.accountId);
    const later = Array.from({ length: concurrency }, (_, index) =>
      call(narrow, 31_300 + index, index, 1_500),
    );
    await waitReserved(customer.accountId, concurrency);
    expect(statuses([await call(narrow, 31_400, 9, 0)])).toEqual({ '429 concurrency_limit_exceeded': 1 });
    expect(statuses(await Promise.all(later))).toEqual({ ok: concurrency });

    // The rate window started afresh too: `windowed` gets its ceiling once more in the same window.
    const again: Outcome[] = [];
    for (let index = 0; index <= rpm; index++) again.push(await call(windowed, 33_000 + index, 0, 0));
    expect(statuses(again)).toEqual({ ok: rpm, '429 rate_limit_exceeded': 1 });

    const rows = await waitUntilNoneOpen(customer.accountId);
    await expectMoneyAddsUp(customer.accountId, rows);
  });

  it('keeps settlements a stopping gateway could not deliver through a Redis restart: its own copy delivers them', {
    timeout: 90_000,
  }, async () => {
    const { accountId, secret } = await loadCustomer('kept settlements');
    const dataDir = await mkdtemp(path.join(tmpdir(), 'tollgate-kept-'));
    try {
      const env = { GATEWAY_DATA_DIR: dataDir, SHUTDOWN_DRAIN_MS: '300', LOG_LEVEL: 'info' };
      const keeper = await stack.startGateway('keeper', env);
      const index = 40_000;
      const stream = await openaiClient(keeper.url, secret).chat.completions.create({
        model: 'gpt-e2e',
        max_tokens: 8,
        stream: true,
        messages: [
          {
            role: 'user',
            content: `kept @mock(words=6,chunk_delay=150,input_tokens=${inputOf(index)},output_tokens=${OUTPUT_TOKENS})`,
          },
        ],
      });
      const chunks = stream[Symbol.asyncIterator]();
      await chunks.next();
      // The control plane dies while the answer streams: its settlement can only wait in the gateway.
      await stack.killControlPlane();
      while (!(await chunks.next()).done) {}
      // Stopped while the control plane is still away: the settlement is kept, not delivered.
      const stopping = Date.now();
      await keeper.service.stop();
      // Exited by itself (the harness sends SIGKILL after 10 s), having kept what it held.
      expect(keeper.service.child.exitCode).toBe(0);
      console.info(`keeper gateway stopped in ${Date.now() - stopping} ms`);
      const list = async () =>
        (
          await run('redis-cli', ['-u', redis.url, '--scan', '--pattern', '*billing:pending-finishes'])
        ).trim();
      expect(await list()).not.toBe('');

      // Redis loses everything (no persistence), then the control plane comes back.
      await redis.kill();
      await redis.start();
      expect(await list()).toBe('');
      await stack.startControlPlane();

      // The gateway starts again on its data folder and delivers its own copy.
      const again = await stack.startGateway('keeper-again', env);
      const rows = await waitUntilNoneOpen(accountId, 1);
      expect(rows.map((row) => ({ status: row.status, index: row.index }))).toEqual([
        { status: 'settled', index },
      ]);
      await expectMoneyAddsUp(accountId, rows);
      // Delivered, the copy is gone: a later start delivers nothing again.
      expect(existsSync(path.join(dataDir, 'pending-finishes.jsonl'))).toBe(false);
      await again.service.stop();
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
