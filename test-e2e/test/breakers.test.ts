/**
 * Upstream circuit breakers on real processes (docs/routing.md): an upstream failing half of its
 * calls with 500 costs clients nothing (each failure moves to the next upstream), its breaker opens
 * within the window and traffic stays on the other upstream; once the mock recovers, the one
 * half-open probe closes it and traffic comes back. The same across three gateways behind nginx,
 * whose breaker state is shared in Redis: one probe for all of them. A 429 with Retry-After: 2
 * benches the upstream for 2 s on every gateway, no sooner.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mockRequests, openaiClient } from '../src/clients.ts';
import { type Customer, DashboardSession, signUpCustomer } from '../src/customer.ts';
import { type RunningNginx, startNginx } from '../src/nginx.ts';
import { type E2EStack, startStack } from '../src/stack.ts';

const FLAKY = 'upstream-breaker-flaky';
const STEADY = 'upstream-breaker-steady';
/** Long enough for the calls after the opening to run within it on a busy machine. */
const OPEN_MS = 5_000;
/** Breakers that open at a 30 % error rate over 10 s, once 10 calls were made; no per-process cooldown. */
const GATEWAY_ENV = {
  ROUTING_COOLDOWN_MS: '0',
  ROUTING_BREAKER_WINDOW_MS: '10000',
  ROUTING_BREAKER_MIN_CALLS: '10',
  ROUTING_BREAKER_ERROR_PERCENT: '30',
  ROUTING_BREAKER_OPEN_MS: String(OPEN_MS),
  LOG_LEVEL: 'warn',
  STATUS_HEARTBEAT_SECONDS: '1',
};

let stack: E2EStack;
let customer: Customer;
let secret: string;
let nginx: RunningNginx;
let folder: string;
/** One gateway alone, and three behind nginx. */
let single: OpenAI;
let balanced: OpenAI;
let admin: DashboardSession;

beforeAll(async () => {
  stack = await startStack('breakers', {
    controlPlaneEnv: { KEY_MAX_CONCURRENCY: '64', KEY_MAX_REQUESTS_PER_MINUTE: '1000000' },
  });
  customer = await signUpCustomer(stack, { credits: 100_000_000n });
  ({ secret } = await customer.createKey({
    name: 'breakers',
    limits: { requestsPerMinute: 100_000, concurrency: 32 },
  }));
  const email = `breakers-admin-${Date.now()}@example.test`;
  const password = 'a long enough password for the admin';
  await stack.admin('create-account', email, '--password', password);
  await stack.admin('set-role', email, 'admin');
  admin = new DashboardSession(stack.controlPlaneUrl);
  await admin.logIn(email, password);
  const alias = {
    protocols: ['chat_completions'],
    published: true,
    price: { input: '2', output: '8' },
    defaultMaxOutputTokens: 64,
    maxOutputTokens: 256,
  };
  for (const name of ['breaker-one-e2e', 'breaker-many-e2e', 'breaker-bench-e2e']) {
    const saved = await admin.request('PUT', `/admin/catalog/aliases/${name}`, {
      ...alias,
      upstreams: [
        { providerId: 'mock-openai', upstreamModel: `${FLAKY}-${name}` },
        { providerId: 'mock-openai', upstreamModel: `${STEADY}-${name}`, priority: 1 },
      ],
    });
    expect(saved.status).toBe(200);
  }
  for (const [name, limits] of [
    ['capped-concurrency-e2e', { maxConcurrency: 2 }],
    ['capped-rate-e2e', { requestsPerMinute: 3 }],
  ] as const) {
    const saved = await admin.request('PUT', `/admin/catalog/aliases/${name}`, {
      ...alias,
      upstreams: [
        { providerId: 'mock-openai', upstreamModel: `${FLAKY}-${name}`, ...limits },
        { providerId: 'mock-openai', upstreamModel: `${STEADY}-${name}`, priority: 1 },
      ],
    });
    expect(saved.status).toBe(200);
  }
  const catalog = await admin.request('GET', '/admin/catalog');
  const capped = catalog.body.data.aliases.find(
    (each: { alias: string }) => each.alias === 'capped-concurrency-e2e',
  );
  expect(capped.upstreams[0]).toMatchObject({ maxConcurrency: 2 });
  single = openaiClient((await stack.startGateway('single', GATEWAY_ENV)).url, secret);
  const gateways = [];
  for (const name of ['a', 'b', 'c']) gateways.push(await stack.startGateway(name, GATEWAY_ENV));
  folder = await mkdtemp(path.join(tmpdir(), 'tollgate-breakers-'));
  nginx = await startNginx(
    folder,
    gateways.map((gateway) => gateway.url),
  );
  balanced = openaiClient(nginx.url, secret);
  for (const client of [single, ...gateways.map((gateway) => openaiClient(gateway.url, secret))]) {
    for (let tries = 0; ; tries++) {
      const models = (await client.models.list()).data.map((model) => model.id);
      if (models.includes('capped-rate-e2e')) break;
      if (tries > 200) throw new Error('the gateway never loaded the aliases');
      // A poll: the gateway's reload on the change event has no signal a test can wait on.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
});

afterAll(async () => {
  await nginx?.stop();
  if (folder) await rm(folder, { recursive: true, force: true });
  if (stack) expect(await stack.admin('verify-ledger')).toEqual({ consistent: true, problems: [] });
  await stack?.close();
});

/** Calls sent so far, which makes each call's conversation new. */
let sent = 0;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `count` calls, `concurrency` at a time, each tagged; the HTTP status of each (0: no answer). */
async function calls(
  client: OpenAI,
  alias: string,
  directives: string,
  count: number,
  concurrency: number,
): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next++;
      sent++;
      try {
        await client.chat.completions.create({
          model: alias,
          max_tokens: 8,
          // Each call its own conversation: prompt-cache affinity would keep one on its upstream.
          messages: [{ role: 'user', content: `Call ${sent} @mock(${directives})` }],
        });
        statuses.push(200);
      } catch (error) {
        statuses.push((error as { status?: number }).status ?? 0);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return statuses;
}

/** How many calls of the phase (tag) each upstream of `alias` received, in the order received. */
async function received(
  tag: string,
  alias: string,
): Promise<{ flaky: number; steady: number; order: string[] }> {
  const requests = await mockRequests(stack.mockUrl, tag);
  const order = requests.map((request) => (JSON.parse(request.body) as { model: string }).model);
  return {
    flaky: order.filter((model) => model === `${FLAKY}-${alias}`).length,
    steady: order.filter((model) => model === `${STEADY}-${alias}`).length,
    order,
  };
}

async function failingHalfThenRecovering(client: OpenAI, alias: string, concurrency: number) {
  const flaky = `${FLAKY}-${alias}`;
  const failing = `only_model=${flaky},status=500,fail_percent=50`;
  const started = Date.now();
  // 30 calls: enough for the window's error rate to open the breaker (after 10 calls), if five
  // failures in a row did not open it before.
  const first = await calls(client, alias, `${failing},tag=${alias}-1`, 30, concurrency);
  expect(first.filter((status) => status !== 200)).toEqual([]);
  const opening = await received(`${alias}-1`, alias);
  expect(opening.flaky).toBeGreaterThanOrEqual(5);
  expect(opening.flaky).toBeLessThan(30);
  // Opened within the window: the next calls, still failing half, all go to the steady upstream.
  const second = await calls(client, alias, `${failing},tag=${alias}-2`, 12, concurrency);
  expect(Date.now() - started).toBeLessThan(10_000);
  expect(second.filter((status) => status !== 200)).toEqual([]);
  expect(await received(`${alias}-2`, alias)).toMatchObject({ flaky: 0, steady: 12 });

  // The mock recovers; once the cool-down ends (counted from the opening, before the calls above), the probe closes the breaker and traffic returns.
  // The cool-down is a span of time: there is no event to wait for.
  await sleep(OPEN_MS + 200);
  const third = await calls(client, alias, `tag=${alias}-3`, 20, concurrency);
  expect(third.filter((status) => status !== 200)).toEqual([]);
  const back = await received(`${alias}-3`, alias);
  expect(back.order.slice(-10)).toEqual(Array(10).fill(flaky));
}

describe('an upstream failing half of its calls with 500', () => {
  it('one gateway: no client error, the breaker opens within the window, traffic moves and comes back after the probe', async () => {
    await failingHalfThenRecovering(single, 'breaker-one-e2e', 2);
  });

  it('three gateways behind nginx: the same, with the state shared and one probe for all of them', async () => {
    await failingHalfThenRecovering(balanced, 'breaker-many-e2e', 6);
    const alias = 'breaker-many-e2e';
    const flaky = `${FLAKY}-${alias}`;
    // Open it again (every call to the flaky upstream fails), let the cool-down end, then send
    // twelve calls at once through all three gateways: exactly one of them probes the upstream.
    const down = await calls(balanced, alias, `only_model=${flaky},status=500,tag=${alias}-4`, 15, 3);
    expect(down.filter((status) => status !== 200)).toEqual([]);
    expect((await received(`${alias}-4`, alias)).flaky).toBeLessThan(15);
    // Real time: the breaker's cool-down is a span of time, not an event.
    await sleep(OPEN_MS + 200);
    const probing = await calls(balanced, alias, `only_model=${flaky},status=500,tag=${alias}-5`, 12, 12);
    expect(probing.filter((status) => status !== 200)).toEqual([]);
    expect(await received(`${alias}-5`, alias)).toMatchObject({ flaky: 1, steady: 12 });

    // Admins see it open again, with why; the heartbeat is a span of time: there is no event.
    let breaker: Record<string, unknown> | undefined;
    for (let tries = 0; !breaker && tries < 50; tries++) {
      const page = await admin.request('GET', '/admin/routing/breakers');
      expect(page.status).toBe(200);
      breaker = page.body.data.find(
        (each: { upstreamModel: string; reason: string }) =>
          each.upstreamModel === flaky && each.reason === 'probe_failed',
      );
      // Polls: gateways report breakers with their heartbeat, which announces nothing to the test.
      if (!breaker) await sleep(200);
    }
    expect(breaker).toMatchObject({
      providerId: 'mock-openai',
      state: 'open',
      cause: 'upstream_unavailable (500)',
      trips: 2,
    });
    expect(Date.parse(String(breaker?.openUntil))).toBeGreaterThan(Date.now());
    const customerView = await customer.dashboard.request('GET', '/admin/routing/breakers');
    expect(customerView.status).toBe(403);
  });
});

describe('a 429 with Retry-After: 2', () => {
  it('benches the upstream on every gateway for about 2 s, no sooner', async () => {
    const alias = 'breaker-bench-e2e';
    const flaky = `${FLAKY}-${alias}`;
    // The bench starts when a gateway reads the 429: after sentAt, before benchedAt.
    const sentAt = Date.now();
    const limited = await calls(
      balanced,
      alias,
      `only_model=${flaky},status=429,retry_after=2,tag=bench-1`,
      1,
      1,
    );
    expect(limited).toEqual([200]);
    const benchedAt = Date.now();
    expect(await received('bench-1', alias)).toMatchObject({ flaky: 1, steady: 1 });
    // Through every gateway, until well before the 2 s end: the steady upstream serves them all.
    // Bounded in count too: the mock keeps the last 200 requests it received.
    let during = 0;
    while (Date.now() - sentAt < 1_600 && during < 150) {
      expect(await calls(balanced, alias, 'tag=bench-2', 3, 3)).toEqual([200, 200, 200]);
      during += 3;
    }
    expect(await received('bench-2', alias)).toMatchObject({ flaky: 0, steady: during });
    // The bench is a span of time: there is no event to wait for.
    await sleep(2_300 - (Date.now() - benchedAt));
    expect(await calls(balanced, alias, 'tag=bench-3', 6, 1)).toEqual(Array(6).fill(200));
    expect(await received('bench-3', alias)).toMatchObject({ flaky: 6, steady: 0 });
  });
});

describe("an upstream's own limits on the operator's account", () => {
  it('at its max_concurrency, across three gateways, it is skipped: the next upstream answers', async () => {
    const alias = 'capped-concurrency-e2e';
    // Twelve calls at once through three gateways, each held 1.5 s by the capped upstream.
    const statuses = await calls(
      balanced,
      alias,
      `only_model=${FLAKY}-${alias},delay=1500,tag=cap-1`,
      12,
      12,
    );
    expect(statuses).toEqual(Array(12).fill(200));
    expect(await received('cap-1', alias)).toMatchObject({ flaky: 2, steady: 10 });
    // Its slots come back when the calls end.
    expect(await calls(balanced, alias, 'tag=cap-2', 3, 1)).toEqual([200, 200, 200]);
    expect(await received('cap-2', alias)).toMatchObject({ flaky: 3, steady: 0 });
  });

  it('at its requests_per_minute, across three gateways, it is skipped for the rest of the minute', async () => {
    const alias = 'capped-rate-e2e';
    const minute = () => Math.floor(Date.now() / 60_000);
    const before = minute();
    expect(await calls(balanced, alias, 'tag=rate-1', 7, 1)).toEqual(Array(7).fill(200));
    const { flaky, steady } = await received('rate-1', alias);
    expect(flaky + steady).toBe(7);
    // Windows are whole minutes: one that turned during the calls starts a new count.
    if (minute() === before) expect(flaky).toBe(3);
    else expect(flaky).toBeLessThanOrEqual(6);
  });
});
