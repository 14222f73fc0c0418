/**
 * Many calls at once on one balance, through the gateway with its default reservation batching
 * (several batches in flight): the balance never goes below zero, a balance for N calls admits
 * exactly N when each call is charged what it reserved, and every admitted call is settled once.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openaiClient } from '../src/clients.ts';
import { signUpCustomer } from '../src/customer.ts';
import { closeCheckingLedger, readBalances } from '../src/ledger.ts';
import { type E2EStack, startStack } from '../src/stack.ts';

const CALLS = 200;
const ADMITTED = 37;
const MAX_TOKENS = 32;

let stack: E2EStack;

beforeAll(async () => {
  stack = await startStack('metered-race', {
    // No overrun cover, so that N reservations can use the whole balance; keys above the default
    // account maxima, so that the limiter is not what refuses.
    controlPlaneEnv: {
      RESERVE_OVERRUN_COVER_PERCENT: '0',
      KEY_MAX_CONCURRENCY: '256',
      KEY_MAX_REQUESTS_PER_MINUTE: '1000000',
    },
  });
});

afterAll(() => closeCheckingLedger(stack));

const body = (inputTokens: number) => ({
  model: 'gpt-e2e',
  max_tokens: MAX_TOKENS,
  messages: [
    { role: 'user' as const, content: `Race @mock(input_tokens=${inputTokens},output_tokens=${MAX_TOKENS})` },
  ],
});

async function lastReservation(accountId: string) {
  const { rows } = await stack.db.query<{
    estimate_input: string;
    reserved_credits: string;
    charged_credits: string;
    status: string;
  }>(
    `select estimate_input::text, reserved_credits::text, charged_credits::text, status
     from reservations where account_id = $1 order by created_at desc limit 1`,
    [accountId],
  );
  return rows[0]!;
}

/** Waits until the account has `count` finished calls and none open (a finished call's row is written once it has finished). */
async function waitForFinished(accountId: string, count: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { rows } = await stack.db.query<{ open: string; finished: string }>(
      `select count(*) filter (where status = 'reserved')::text as open,
              count(*) filter (where status <> 'reserved')::text as finished
       from reservations where account_id = $1`,
      [accountId],
    );
    if (rows[0]?.open === '0' && Number(rows[0]?.finished) >= count) return;
    if (Date.now() > deadline) throw new Error(`${rows[0]?.finished} of ${count} calls finished`);
    // The processes announce no settlement to the test: read the rows again.
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('200 concurrent calls on a balance for N', () => {
  it('admit exactly N when each call is charged what it reserved, and settle each once', {
    timeout: 120_000,
  }, async () => {
    // Find the body whose reported usage equals its own reservation: the mock reports the
    // input the gateway estimated, and the whole max output.
    const probe = await signUpCustomer(stack, { credits: 10_000_000n });
    const probeKey = await probe.createKey({ name: 'probe' });
    let inputTokens = 20;
    let reservation = await lastReservationAfterCall(probe.accountId, probeKey.secret, inputTokens);
    for (let attempt = 0; attempt < 5 && reservation.estimate_input !== String(inputTokens); attempt++) {
      inputTokens = Number(reservation.estimate_input);
      reservation = await lastReservationAfterCall(probe.accountId, probeKey.secret, inputTokens);
    }
    expect(reservation.estimate_input).toBe(String(inputTokens));
    expect(reservation.charged_credits).toBe(reservation.reserved_credits);
    const perCall = BigInt(reservation.reserved_credits);

    const racer = await signUpCustomer(stack, { credits: perCall * BigInt(ADMITTED) });
    const { secret } = await racer.createKey({
      name: 'race',
      limits: { concurrency: 256, requestsPerMinute: 100_000 },
    });
    const client = openaiClient(stack.gatewayUrl, secret);
    const outcomes = await Promise.allSettled(
      Array.from({ length: CALLS }, () => client.chat.completions.create(body(inputTokens))),
    );
    const admitted = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    const refused = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason] : []));
    expect(admitted.length).toBe(ADMITTED);
    for (const error of refused) {
      expect(error).toBeInstanceOf(OpenAI.APIError);
      expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
      expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('insufficient_credits');
    }

    await waitForFinished(racer.accountId, ADMITTED);
    const { rows } = await stack.db.query<{ status: string; count: string; charged: string }>(
      `select status, count(*)::text as count, sum(charged_credits)::text as charged
         from reservations where account_id = $1 group by status`,
      [racer.accountId],
    );
    expect(rows).toEqual([
      { status: 'settled', count: String(ADMITTED), charged: String(perCall * BigInt(ADMITTED)) },
    ]);
    const balances = await readBalances(stack.db, racer.accountId);
    expect(balances).toMatchObject({ credits: 0n, reservedCredits: 0n });
  });
});

let probeCalls = 0;

async function lastReservationAfterCall(accountId: string, secret: string, inputTokens: number) {
  await openaiClient(stack.gatewayUrl, secret).chat.completions.create(body(inputTokens));
  probeCalls += 1;
  await waitForFinished(accountId, probeCalls);
  return lastReservation(accountId);
}
