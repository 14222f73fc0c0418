/**
 * An alias served by several upstreams (docs/routing.md): a call whose upstream fails before
 * anything reached the client (connect error, 5xx, 429, timeout before headers) is answered by
 * the next one, charged once at the alias's price from the usage of the upstream that answered;
 * a stream that failed after its first bytes is never retried. Admins see which upstream served;
 * the customer never does.
 */
import { readFile } from 'node:fs/promises';
import { findFreePort } from '@tollgate/test-harness';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { expectOpenAIError, mockRequests, openaiClient, rejection } from '../src/clients.ts';
import { type Customer, DashboardSession, signUpCustomer } from '../src/customer.ts';
import { closeCheckingLedger, expectSettledInCredits, Meter } from '../src/ledger.ts';
import { type E2EStack, PROVIDER_KEY, type RunningGatewayProcess, startStack } from '../src/stack.ts';

let stack: E2EStack;
let customer: Customer;
let meter: Meter;
let admin: DashboardSession;
/** A gateway without cooldowns or breakers: each failover test starts from the alias's own order. */
let openai: OpenAI;
/** The same, waiting 400 ms for an upstream's headers. */
let impatient: OpenAI;
/** A gateway that tries an upstream last for 5 s after it failed (or for its Retry-After). */
let cooling: OpenAI;
/** A gateway with metrics and a heartbeat every second, for the credential pool. */
let pooledGateway: RunningGatewayProcess;
let pooled: OpenAI;
let pooledMetricsUrl: string;

const PRICE = { input: 2n, output: 8n };
const MAIN = 'upstream-routed-main';
const BACKUP = 'upstream-routed-backup';
const DEAD = 'upstream-routed-dead';

beforeAll(async () => {
  stack = await startStack('routing');
  customer = await signUpCustomer(stack, { credits: 10_000_000n });
  // 600 a minute: the affinity test alone makes 100 calls.
  const { secret } = await customer.createKey({ name: 'routing', limits: { requestsPerMinute: 600 } });
  const steady = await stack.startGateway('steady', { ROUTING_COOLDOWN_MS: '0', ROUTING_BREAKERS: 'false' });
  openai = openaiClient(steady.url, secret);
  const gateway = await stack.startGateway('impatient', {
    UPSTREAM_HEADERS_TIMEOUT_MS: '400',
    ROUTING_COOLDOWN_MS: '0',
    ROUTING_BREAKERS: 'false',
  });
  impatient = openaiClient(gateway.url, secret);
  cooling = openaiClient((await stack.startGateway('cooling', { ROUTING_COOLDOWN_MS: '5000' })).url, secret);
  const metricsPort = await findFreePort();
  pooledGateway = await stack.startGateway('pooled', {
    STATUS_HEARTBEAT_SECONDS: '1',
    METRICS_PORT: String(metricsPort),
    METRICS_HOST: '127.0.0.1',
  });
  pooled = openaiClient(pooledGateway.url, secret);
  pooledMetricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;

  const email = `routing-admin-${Date.now()}@example.test`;
  const password = 'a long enough password for the admin';
  await stack.admin('create-account', email, '--password', password);
  await stack.admin('set-role', email, 'admin');
  admin = new DashboardSession(stack.controlPlaneUrl);
  await admin.logIn(email, password);
  // Nothing listens on port 1: connecting is refused.
  const dead = await admin.request('PUT', '/admin/catalog/providers/mock-dead', {
    kind: 'openai',
    baseUrl: 'http://127.0.0.1:1/v1',
    credentialRef: 'TOLLGATE_PROVIDER_MOCK_KEY',
  });
  expect(dead.status).toBe(200);
  // A pool whose first credential the mock refuses (401), its second it accepts.
  const pool = await admin.request('PUT', '/admin/catalog/providers/mock-pooled', {
    kind: 'openai',
    baseUrl: `${stack.mockUrl}/v1`,
    credentialRef: null,
    credentialRefs: ['TOLLGATE_PROVIDER_WRONG_KEY', 'TOLLGATE_PROVIDER_MOCK_KEY'],
  });
  expect(pool.status).toBe(200);
  const pooledAlias = await admin.request('PUT', '/admin/catalog/aliases/pooled-e2e', {
    protocols: ['chat_completions', 'responses'],
    published: true,
    price: { input: String(PRICE.input), output: String(PRICE.output) },
    defaultMaxOutputTokens: 256,
    maxOutputTokens: 4096,
    providerId: 'mock-pooled',
    upstreamModel: MAIN,
  });
  expect(pooledAlias.status).toBe(200);
  const alias = {
    protocols: ['chat_completions', 'responses'],
    published: true,
    price: { input: String(PRICE.input), output: String(PRICE.output) },
    defaultMaxOutputTokens: 256,
    maxOutputTokens: 4096,
  };
  // Two upstreams of one priority and weight: only affinity keeps a conversation on one.
  const even = await admin.request('PUT', '/admin/catalog/aliases/even-e2e', {
    ...alias,
    upstreams: [
      { providerId: 'mock-openai', upstreamModel: MAIN },
      { providerId: 'mock-openai', upstreamModel: BACKUP },
    ],
  });
  expect(even.status).toBe(200);
  for (const [name, first] of [
    ['routed-e2e', { providerId: 'mock-openai', upstreamModel: MAIN }],
    ['dead-first-e2e', { providerId: 'mock-dead', upstreamModel: DEAD }],
  ] as const) {
    const saved = await admin.request('PUT', `/admin/catalog/aliases/${name}`, {
      ...alias,
      upstreams: [first, { providerId: 'mock-openai', upstreamModel: BACKUP, priority: 1 }],
    });
    expect(saved.status).toBe(200);
  }
  // Gateways reload the catalogue on the change event; wait until both list the new aliases.
  for (const client of [openai, impatient, cooling, pooled]) {
    for (let tries = 0; ; tries++) {
      const models = (await client.models.list()).data.map((model) => model.id);
      if (['dead-first-e2e', 'pooled-e2e', 'even-e2e'].every((model) => models.includes(model))) break;
      if (tries > 200) throw new Error('the gateway never loaded the routed aliases');
      // A poll: the gateway's reload on the change event has no signal a test can wait on.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  meter = new Meter(stack, customer.accountId);
});

beforeEach(() => meter.mark());

afterAll(() => closeCheckingLedger(stack));

let conversations = 0;
/** Each call a conversation of its own: affinity never keeps these on the upstream before. */
const chat = (directives: string, model = 'routed-e2e') => ({
  model,
  max_tokens: 64,
  messages: [{ role: 'user' as const, content: `Hi ${++conversations} @mock(${directives})` }],
});

/** The route an admin sees for the account's newest call. */
async function routeOfLastCall() {
  const page = await admin.request('GET', `/admin/accounts/${customer.accountId}/activity?limit=1`);
  expect(page.status).toBe(200);
  return page.body.data.items[0].route;
}

/** The customer's own view of its calls names no upstream. */
async function expectCustomerSeesNoUpstream(): Promise<void> {
  const page = await customer.dashboard.request('GET', '/me/activity?limit=5');
  expect(page.status).toBe(200);
  const text = JSON.stringify(page.body);
  for (const secret of [MAIN, BACKUP, DEAD, 'mock-openai', 'mock-dead', '"route"']) {
    expect(text).not.toContain(secret);
  }
}

function expectNoProviderDetails(value: unknown): void {
  const text = JSON.stringify(value);
  for (const secret of [MAIN, BACKUP, DEAD, 'mock-openai', 'mock-dead', stack.mockUrl]) {
    expect(text).not.toContain(secret);
  }
}

describe('failover before the first byte', () => {
  it('a 5xx from the first upstream: the next answers, charged once from its usage', async () => {
    const answer = await openai.chat.completions.create(
      chat(`only_model=${MAIN},status=500,input_tokens=11,output_tokens=7`),
    );
    expect(answer.model).toBe('routed-e2e');
    expect(answer.choices[0]?.message.content).toMatch(/^Hello/);
    expectNoProviderDetails(answer);
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICE, { input: 11, output: 7 });
    expect(await routeOfLastCall()).toEqual({
      providerId: 'mock-openai',
      upstreamModel: BACKUP,
      attempts: 2,
    });
    await expectCustomerSeesNoUpstream();
  });

  it('a 429 on a stream: the next upstream streams the answer', async () => {
    const stream = await openai.chat.completions.create({
      ...chat(`only_model=${MAIN},status=429,retry_after=1,input_tokens=5,output_tokens=3`),
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    for await (const chunk of stream) {
      expectNoProviderDetails(chunk);
      text += chunk.choices[0]?.delta.content ?? '';
    }
    expect(text).toMatch(/^Hello/);
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICE, { input: 5, output: 3 });
    expect(await routeOfLastCall()).toEqual({
      providerId: 'mock-openai',
      upstreamModel: BACKUP,
      attempts: 2,
    });
  });

  it('a refused connection: the next upstream answers', async () => {
    const answer = await openai.responses.create({
      model: 'dead-first-e2e',
      input: 'Hi @mock(input_tokens=4,output_tokens=6)',
    });
    expect(answer.output_text).toMatch(/^Hello/);
    expect(answer.model).toBe('dead-first-e2e');
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICE, { input: 4, output: 6 });
    expect(await routeOfLastCall()).toEqual({
      providerId: 'mock-openai',
      upstreamModel: BACKUP,
      attempts: 2,
    });
  });

  it('no headers within the timeout: the next upstream answers', async () => {
    const answer = await impatient.chat.completions.create(
      chat(`only_model=${MAIN},delay=3000,input_tokens=3,output_tokens=2`),
    );
    expect(answer.choices[0]?.message.content).toMatch(/^Hello/);
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICE, { input: 3, output: 2 });
    expect(await routeOfLastCall()).toEqual({
      providerId: 'mock-openai',
      upstreamModel: BACKUP,
      attempts: 2,
    });
  });

  it('every upstream failing: upstream_unavailable naming none of them; released, nothing charged', async () => {
    const error = await expectOpenAIError(
      openai.chat.completions.create(chat('status=503')),
      OpenAI.InternalServerError,
      503,
      'upstream_unavailable',
    );
    expectNoProviderDetails({ message: error.message, error: error.error });
    const [row] = await meter.finished();
    expect(row).toMatchObject({ status: 'released', outcome: 'upstream_unavailable', chargedCredits: 0n });
    expect(await routeOfLastCall()).toEqual({
      providerId: 'mock-openai',
      upstreamModel: BACKUP,
      attempts: 2,
    });
  });
});

describe('no failover', () => {
  it("the request's own fault (a provider 400) passes through as upstream_rejected, tried once", async () => {
    await expectOpenAIError(
      openai.chat.completions.create(chat(`only_model=${MAIN},status=400`)),
      OpenAI.BadRequestError,
      400,
      'upstream_rejected',
    );
    const [row] = await meter.finished();
    expect(row).toMatchObject({ status: 'released', outcome: 'upstream_rejected', chargedCredits: 0n });
    expect(await routeOfLastCall()).toEqual({ providerId: 'mock-openai', upstreamModel: MAIN, attempts: 1 });
  });

  it('a stream that failed after its first bytes reached the client is never retried nor charged twice', async () => {
    const stream = await openai.chat.completions.create({
      ...chat(`only_model=${MAIN},stream_error,words=5`),
      stream: true,
    });
    const contents: string[] = [];
    const error = await rejection(
      (async () => {
        for await (const chunk of stream) contents.push(chunk.choices[0]?.delta.content ?? '');
      })(),
    );
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('upstream_unavailable');
    expect(contents.join('')).toMatch(/^Hello/);
    const [row] = await meter.finished();
    expect(row).toMatchObject({ status: 'held', outcome: 'upstream_unavailable', chargedCredits: 0n });
    expect(await routeOfLastCall()).toEqual({ providerId: 'mock-openai', upstreamModel: MAIN, attempts: 1 });
  });
});

describe('cooldown', () => {
  async function servedBy(directives: string): Promise<{ upstreamModel: string; attempts: number }> {
    const answer = await cooling.chat.completions.create(chat(directives));
    expect(answer.choices[0]?.message.content).toMatch(/^Hello/);
    await meter.finished();
    return await routeOfLastCall();
  }

  it('an upstream that failed is tried last while it cools down', async () => {
    expect(await servedBy(`only_model=${MAIN},status=502`)).toMatchObject({
      upstreamModel: BACKUP,
      attempts: 2,
    });
    // The next calls go to the backup first, without paying the failing upstream's error again.
    expect(await servedBy('')).toMatchObject({ upstreamModel: BACKUP, attempts: 1 });
    expect(await servedBy(`only_model=${MAIN},status=502`)).toMatchObject({
      upstreamModel: BACKUP,
      attempts: 1,
    });
  });

  it("a 429's Retry-After benches the upstream for that long, not for the cooldown", async () => {
    // The main upstream is still cooling from the test before: a backup failure sends a call to
    // it, and its success ends its cooldown.
    expect(await servedBy(`only_model=${BACKUP},status=500`)).toMatchObject({
      upstreamModel: MAIN,
      attempts: 2,
    });
    expect(await servedBy(`only_model=${MAIN},status=429,retry_after=1`)).toMatchObject({
      upstreamModel: BACKUP,
      attempts: 2,
    });
    const benched = Date.now();
    expect(await servedBy('')).toMatchObject({ upstreamModel: BACKUP, attempts: 1 });
    // The bench is a span of time (Retry-After: 1), there is no event to wait for.
    await new Promise((resolve) => setTimeout(resolve, 1_100 - (Date.now() - benched)));
    expect(await servedBy('')).toMatchObject({ upstreamModel: MAIN, attempts: 1 });
  });
});

describe('a credential pool', () => {
  it('a credential the provider refuses leaves the pool and is reported; the other keeps serving', async () => {
    for (let call = 0; call < 4; call++) {
      const request = chat('input_tokens=6,output_tokens=4', 'pooled-e2e');
      if (call % 2 === 0) {
        const answer = await pooled.chat.completions.create(request);
        expect(answer.choices[0]?.message.content).toMatch(/^Hello/);
      } else {
        let text = '';
        const stream = await pooled.chat.completions.create({ ...request, stream: true });
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
        expect(text).toMatch(/^Hello/);
      }
    }
    for (const row of await meter.finished(4)) expectSettledInCredits(row, PRICE, { input: 6, output: 4 });

    // Refused once, then out of rotation: counted once, by name.
    const metrics = await (await fetch(pooledMetricsUrl)).text();
    expect(metrics).toMatch(
      /tollgate_gateway_credential_refusals_total\{[^}]*provider="mock-pooled"[^}]*credential="TOLLGATE_PROVIDER_WRONG_KEY"[^}]*\} 1\n/,
    );
    expect(metrics).not.toContain('credential="TOLLGATE_PROVIDER_MOCK_KEY"');

    // Admins see it once the gateway's next heartbeat (every second here) arrives.
    let listed: unknown[] = [];
    for (let tries = 0; listed.length === 0; tries++) {
      if (tries > 100) throw new Error('the refused credential was never reported');
      // A poll: the heartbeat is the gateway's, on its own timer.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const page = await admin.request('GET', '/admin/routing/credentials');
      expect(page.status).toBe(200);
      listed = page.body.data;
    }
    expect(listed).toEqual([
      {
        providerId: 'mock-pooled',
        credential: 'TOLLGATE_PROVIDER_WRONG_KEY',
        upstreamStatus: 401,
        refusedAt: expect.any(String),
        gateways: 1,
      },
    ]);
    const customerView = await customer.dashboard.request('GET', '/admin/routing/credentials');
    expect(customerView.status).toBe(403);

    // Reported by name: no credential's value in the log, the metrics or the admin view.
    const log = await readFile(pooledGateway.service.logFile, 'utf8');
    expect(log).toContain('taken out of rotation');
    for (const text of [log, metrics, JSON.stringify(listed)]) {
      expect(text).not.toContain(PROVIDER_KEY);
      expect(text).not.toContain('not-the-provider-key');
    }
  });
});

describe('a credential pool rate-limited on one credential', () => {
  /** A mock that takes any key: both credentials of the pool are accepted, one of them limited. */
  let openMockUrl: string;

  beforeAll(async () => {
    openMockUrl = (await stack.startMock('any-key', { MOCK_UPSTREAM_API_KEY: '' })).url;
    const provider = await admin.request('PUT', '/admin/catalog/providers/mock-rate-pooled', {
      kind: 'openai',
      baseUrl: `${openMockUrl}/v1`,
      credentialRef: null,
      credentialRefs: ['TOLLGATE_PROVIDER_WRONG_KEY', 'TOLLGATE_PROVIDER_MOCK_KEY'],
    });
    expect(provider.status).toBe(200);
    const alias = await admin.request('PUT', '/admin/catalog/aliases/rate-pooled-e2e', {
      protocols: ['chat_completions', 'responses'],
      published: true,
      price: { input: String(PRICE.input), output: String(PRICE.output) },
      defaultMaxOutputTokens: 256,
      maxOutputTokens: 4096,
      upstreams: [
        { providerId: 'mock-rate-pooled', upstreamModel: MAIN },
        { providerId: 'mock-openai', upstreamModel: BACKUP, priority: 1 },
      ],
    });
    expect(alias.status).toBe(200);
    for (let tries = 0; ; tries++) {
      const models = (await pooled.models.list()).data.map((model) => model.id);
      if (models.includes('rate-pooled-e2e')) break;
      if (tries > 200) throw new Error('the gateway never loaded the alias');
      // A poll: the gateway's reload on the change event has no signal a test can wait on.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });

  /** Calls the alias through the pooled gateway; the routes that served them, in call order. */
  async function routesOf(directives: string, calls: number) {
    for (let call = 0; call < calls; call++) {
      const answer = await pooled.chat.completions.create(chat(directives, 'rate-pooled-e2e'));
      expect(answer.choices[0]?.message.content).toMatch(/^Hello/);
    }
    const rows = await meter.finished(calls);
    for (const row of rows) expectSettledInCredits(row, PRICE, { input: 6, output: 4 });
    const { rows: routes } = await stack.db.query<{ id: string; provider_id: string; attempts: number }>(
      `select reservation_id as id, provider_id, attempts from reservation_routes
       where reservation_id = any($1::uuid[])`,
      [rows.map((row) => row.id)],
    );
    const byId = new Map(routes.map((route) => [route.id, route]));
    return rows.map((row) => {
      const route = byId.get(row.id)!;
      return { provider: route.provider_id, attempts: route.attempts };
    });
  }

  it('a 429 benches that credential only: the upstream keeps serving with the other, until every one is out', async () => {
    const tag = `rate-pooled-${Date.now()}`;
    // The mock answers 429 with Retry-After: 30 to the pool's first credential only.
    const limited = `only_key=not-the-provider-key,status=429,retry_after=30,tag=${tag},input_tokens=6,output_tokens=4`;
    expect(await routesOf(limited, 4)).toEqual([
      // The first call met the 429 and went again at once with the other credential, same upstream.
      { provider: 'mock-rate-pooled', attempts: 2 },
      { provider: 'mock-rate-pooled', attempts: 1 },
      { provider: 'mock-rate-pooled', attempts: 1 },
      { provider: 'mock-rate-pooled', attempts: 1 },
    ]);
    // The limited credential was sent once, then benched; the other served every call.
    const sent = (await mockRequests(openMockUrl, tag)).map((request) => request.headers.authorization);
    expect(sent.filter((header) => header === 'Bearer not-the-provider-key')).toHaveLength(1);
    expect(sent.filter((header) => header === `Bearer ${PROVIDER_KEY}`)).toHaveLength(4);

    // Now the other credential is limited too: with none left, the upstream itself is benched and
    // the next upstream of the alias answers, this call and the next.
    const everyKey = `only_model=${MAIN},status=429,retry_after=5,input_tokens=6,output_tokens=4`;
    expect(await routesOf(everyKey, 1)).toEqual([{ provider: 'mock-openai', attempts: 2 }]);
    expect(await routesOf('input_tokens=6,output_tokens=4', 1)).toEqual([
      { provider: 'mock-openai', attempts: 1 },
    ]);
    const log = await readFile(pooledGateway.service.logFile, 'utf8');
    expect(log).toContain('provider rate-limited a credential: benched');
    expect(log).not.toContain(PROVIDER_KEY);
  });
});

describe('prompt-cache affinity', () => {
  it('100 turns of one conversation stay on one upstream across gateways; after it fails they move and stay', {
    timeout: 60_000,
  }, async () => {
    type Message = { role: 'system' | 'user' | 'assistant'; content: string };
    // The mock obeys the body's first directive: the history is kept without any, and only the
    // newest turn carries one.
    const history: Message[] = [
      { role: 'system', content: 'You are the affinity test.' },
      { role: 'user', content: `Conversation ${Date.now()}` },
    ];
    let pinned = '';
    for (let turn = 1; turn <= 100; turn++) {
      // Turn 51 makes the conversation's upstream fail before its first byte (a 500).
      const fault = turn === 51 ? `only_model=${pinned},status=500,` : '';
      const asked = { role: 'user' as const, content: `Turn ${turn}` };
      const messages = [
        ...history,
        { ...asked, content: `${asked.content} @mock(${fault}input_tokens=9,output_tokens=3)` },
      ];
      // Alternate gateways: the record is shared through Redis.
      const client = turn % 2 === 0 ? openai : cooling;
      const { data: answer, response } = await client.chat.completions
        .create({ model: 'even-e2e', max_tokens: 16, messages })
        .withResponse();
      expect(answer.choices[0]?.message.content).toMatch(/^Hello/);
      history.push(asked, { role: 'assistant', content: answer.choices[0]!.message.content ?? '' });
      if (turn === 1) {
        // The call's id names its route, which is written with its settlement (after the answer,
        // when the cost was told from the reservation): wait for it like the ledger.
        const routeOf = () =>
          stack.db.query<{ upstream_model: string }>(
            'select upstream_model from reservation_routes where reservation_id = $1',
            [response.headers.get('x-request-id')],
          );
        let { rows } = await routeOf();
        for (let tries = 0; rows.length === 0 && tries < 200; tries++) {
          // Polls, bounded: the route row lands with the settlement, which announces nothing here.
          await new Promise((resolve) => setTimeout(resolve, 25));
          ({ rows } = await routeOf());
        }
        pinned = rows[0]!.upstream_model;
      }
    }
    const reservations = await meter.finished(100);
    for (const row of reservations) expectSettledInCredits(row, PRICE, { input: 9, output: 3 });
    const { rows } = await stack.db.query<{ id: string; upstream_model: string; attempts: number }>(
      `select reservation_id as id, upstream_model, attempts from reservation_routes
       where reservation_id = any($1::uuid[])`,
      [reservations.map((row) => row.id)],
    );
    const routes = new Map(rows.map((row) => [row.id, row]));
    const served = reservations.map((row) => routes.get(row.id)!);
    const other = pinned === MAIN ? BACKUP : MAIN;
    expect(served.slice(0, 50).map((route) => route.upstream_model)).toEqual(Array(50).fill(pinned));
    expect(served[50]).toMatchObject({ upstream_model: other, attempts: 2 });
    expect(served.slice(50).map((route) => route.upstream_model)).toEqual(Array(50).fill(other));
    expect(served.filter((route) => route.attempts !== 1)).toHaveLength(1);
  });
});
