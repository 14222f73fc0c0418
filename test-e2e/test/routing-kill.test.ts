/**
 * An alias served by two mock provider processes under steady load (docs/routing.md, must-hold 1
 * of the routing work): 20 clients call it without pause, streamed and not, and one of the two
 * processes is killed with `kill -9` part-way. Every call that had not yet received a byte from
 * the killed process is answered by the other one; every call is settled exactly once from the
 * usage of the upstream that answered; the ledger stays consistent.
 *
 * A stream already relaying the killed process's answer cannot move (bytes reached the client):
 * it ends with the spec's mid-stream error and is held, never charged twice. Such a stream is the
 * only error a client may see, and only one that was in flight when the process died.
 */
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openaiClient } from '../src/clients.ts';
import { type Customer, DashboardSession, signUpCustomer } from '../src/customer.ts';
import { closeCheckingLedger, creditCost, Meter } from '../src/ledger.ts';
import { type E2EStack, type RunningMock, startStack } from '../src/stack.ts';

const CLIENTS = 20;
/** Shortened from the 30 s with the kill at 10 s: the same shape, within a test's time. */
const RUN_MS = 9_000;
const KILL_AT_MS = 3_000;
const PRICE = { input: 2n, output: 8n };
const USAGE = { input: 7, output: 5 };
const MODEL = 'upstream-spread-e2e';

let stack: E2EStack;
let second: RunningMock;
let customer: Customer;
let openai: OpenAI;

beforeAll(async () => {
  stack = await startStack('routing-kill', {
    // Keys above the default account maxima: the limiter is not what this test is about.
    controlPlaneEnv: { KEY_MAX_CONCURRENCY: '256', KEY_MAX_REQUESTS_PER_MINUTE: '1000000' },
  });
  second = await stack.startMock('second');
  customer = await signUpCustomer(stack, { credits: 100_000_000n });
  const { secret } = await customer.createKey({
    name: 'routing-kill',
    limits: { concurrency: 64, requestsPerMinute: 1_000_000 },
  });
  openai = openaiClient(stack.gatewayUrl, secret);

  const email = `routing-kill-admin-${Date.now()}@example.test`;
  const password = 'a long enough password for the admin';
  await stack.admin('create-account', email, '--password', password);
  await stack.admin('set-role', email, 'admin');
  const admin = new DashboardSession(stack.controlPlaneUrl);
  await admin.logIn(email, password);
  const provider = await admin.request('PUT', '/admin/catalog/providers/mock-second', {
    kind: 'openai',
    baseUrl: `${second.url}/v1`,
    credentialRef: 'TOLLGATE_PROVIDER_MOCK_KEY',
  });
  expect(provider.status).toBe(200);
  const alias = await admin.request('PUT', '/admin/catalog/aliases/spread-e2e', {
    protocols: ['chat_completions'],
    published: true,
    price: { input: String(PRICE.input), output: String(PRICE.output) },
    defaultMaxOutputTokens: 256,
    maxOutputTokens: 4096,
    upstreams: [
      { providerId: 'mock-openai', upstreamModel: MODEL },
      { providerId: 'mock-second', upstreamModel: MODEL },
    ],
  });
  expect(alias.status).toBe(200);
  for (let tries = 0; ; tries++) {
    const models = (await openai.models.list()).data.map((model) => model.id);
    if (models.includes('spread-e2e')) break;
    if (tries > 200) throw new Error('the gateway never loaded the alias');
    // A poll: the gateway's reload on the change event has no signal a test can wait on.
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
});

afterAll(() => closeCheckingLedger(stack));

interface Call {
  stream: boolean;
  startedAt: number;
  /** A stream's first event reached the client. */
  firstByte: boolean;
  error: unknown;
}

const directives = `input_tokens=${USAGE.input},output_tokens=${USAGE.output}`;
let conversations = 0;

/** One call; resolves (never rejects) with what the client saw. */
async function call(stream: boolean): Promise<Call> {
  const result: Call = { stream, startedAt: Date.now(), firstByte: false, error: null };
  // Each call a conversation of its own, spread by weight (affinity would keep one on one upstream).
  const hi = `Hi ${++conversations}`;
  try {
    if (stream) {
      const chunks = await openai.chat.completions.create({
        model: 'spread-e2e',
        max_tokens: 64,
        stream: true,
        messages: [{ role: 'user', content: `${hi} @mock(${directives},words=8,chunk_delay=40)` }],
      });
      let text = '';
      for await (const chunk of chunks) {
        result.firstByte = true;
        text += chunk.choices[0]?.delta.content ?? '';
      }
      expect(text).toMatch(/^Hello/);
    } else {
      const answer = await openai.chat.completions.create({
        model: 'spread-e2e',
        max_tokens: 64,
        messages: [{ role: 'user', content: `${hi} @mock(${directives},delay=150)` }],
      });
      expect(answer.choices[0]?.message.content).toMatch(/^Hello/);
    }
  } catch (error) {
    result.error = error;
  }
  return result;
}

describe('kill -9 of one of two upstreams under load', () => {
  it('no client error but streams cut mid-way; every call settled once; the ledger consistent', {
    timeout: 40_000,
  }, async () => {
    const meter = new Meter(stack, customer.accountId);
    await meter.mark();
    const started = Date.now();
    let killedAt = Number.POSITIVE_INFINITY;
    const kill = (async () => {
      // The kill's moment is the point of the test: a span of the run, not an event.
      await new Promise((resolve) => setTimeout(resolve, KILL_AT_MS));
      killedAt = Date.now();
      await second.kill();
    })();
    const calls: Call[] = [];
    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, client) => {
        for (let turn = 0; Date.now() - started < RUN_MS; turn++) {
          calls.push(await call((client + turn) % 2 === 0));
        }
      }),
    );
    await kill;

    // The only failures allowed: streams the killed process was relaying when it died.
    const failed = calls.filter((result) => result.error !== null);
    const unexpected = failed.filter(
      (result) => !(result.stream && result.firstByte && result.startedAt < killedAt),
    );
    expect(unexpected.map((result) => String(result.error))).toEqual([]);
    for (const result of failed) {
      expect((result.error as InstanceType<typeof OpenAI.APIError>).code).toBe('upstream_unavailable');
    }
    expect(failed.length).toBeLessThanOrEqual(CLIENTS);
    expect(calls.filter((result) => result.startedAt > killedAt + 500).length).toBeGreaterThan(CLIENTS);

    // Exactly one reservation per call, each finished: settled at the alias's price from the
    // usage the mock told, or (a cut stream) held for reconciliation with nothing charged.
    const rows = await meter.finished(calls.length);
    const settled = rows.filter((row) => row.status === 'settled');
    expect(settled).toHaveLength(calls.length - failed.length);
    for (const row of settled) {
      expect(row.chargedCredits).toBe(creditCost(PRICE, USAGE.input, USAGE.output));
    }
    expect(rows.filter((row) => row.status === 'held')).toHaveLength(failed.length);

    // Both upstreams served before the kill; after it, the survivor alone answered.
    const { rows: routes } = await stack.db.query<{ provider_id: string; after: boolean }>(
      `select r.provider_id, (v.created_at > to_timestamp($2::double precision / 1000) + interval '500 ms') as after
       from reservation_routes r join reservations v on v.id = r.reservation_id
       where v.account_id = $1 and v.status = 'settled'`,
      [customer.accountId, killedAt],
    );
    expect(routes).toHaveLength(settled.length);
    const before = new Set(routes.filter((route) => !route.after).map((route) => route.provider_id));
    expect(before).toEqual(new Set(['mock-openai', 'mock-second']));
    expect(new Set(routes.filter((route) => route.after).map((route) => route.provider_id))).toEqual(
      new Set(['mock-openai']),
    );
  });
});
