import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFundedKey, internalApi, reserveItem, seedCatalog, settleItem } from '../../../test/billing.ts';
import { createClient, type TestClient, uniqueEmail } from '../../../test/client.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { setAccountRoles } from '../accounts/accounts.service.ts';

// Each upstream may carry the operator's cost price; the margin report sets the credits settled
// calls charged against their usage at the cost price of the upstream that served them.
let context: TestContext;
let api: ReturnType<typeof internalApi>;
let admin: TestClient;

const CATALOG = `
providers:
  - { id: up-a, kind: openai, base_url: "http://127.0.0.1:9/a" }
  - { id: up-b, kind: openai, base_url: "http://127.0.0.1:9/b" }
aliases:
  - alias: margined
    upstreams:
      - { provider: up-a, upstream_model: model-a, cost: { input: 1, output: 2 } }
      - { provider: up-b, upstream_model: model-b }
    protocols: [chat_completions]
    price: { input: 3, output: 6 }
    default_max_output_tokens: 100
    max_output_tokens: 1000
  - { alias: single, provider: up-a, upstream_model: model-s, protocols: [chat_completions],
      price: { input: 2, output: 2 }, cost: { input: 1, output: 1, request: 5 },
      default_max_output_tokens: 100, max_output_tokens: 1000 }
`;

beforeAll(async () => {
  context = await createTestContext('margin', { TRUST_PROXY: 'true' });
  await seedCatalog(context, CATALOG);
  api = internalApi(context);
  admin = createClient(context);
  const email = uniqueEmail('margin-admin');
  const { id } = await admin.signUp(email, 'a long enough password');
  await setAccountRoles(context.deps.db, id, { admin: true });
  expect((await admin.logIn(email, 'a long enough password')).status).toBe(200);
}, 60_000);
afterAll(async () => {
  await context.publicApp.mailer.drain();
  await context.close();
});

describe('margin report (admin)', () => {
  it('shows revenue against cost by alias and the upstream that served', async () => {
    const key = await createFundedKey(context, { credits: 1_000_000n });
    const call = async (
      alias: string,
      usage: bigint,
      route?: { providerId: string; upstreamModel: string },
    ) => {
      const item = reserveItem(key, alias, usage, usage);
      expect((await api.reserve([item])).body.results[0]?.ok).toBe(true);
      const settle = settleItem(key, item.reservationId, alias, usage, usage);
      await api.finish([route ? { ...settle, route: { ...route, attempts: 1 } } : settle]);
    };
    await call('margined', 10n, { providerId: 'up-a', upstreamModel: 'model-a' });
    await call('margined', 10n, { providerId: 'up-a', upstreamModel: 'model-a' });
    await call('margined', 5n, { providerId: 'up-b', upstreamModel: 'model-b' });
    await call('single', 4n);

    const report = await admin.request('GET', '/admin/reports/margin');
    expect(report.status).toBe(200);
    const usage = (tokens: string) => ({
      inputTokens: tokens,
      outputTokens: tokens,
      cacheReadTokens: '0',
      cacheWriteTokens: '0',
      cacheWrite1hTokens: '0',
    });
    expect(report.body.data.items).toEqual([
      {
        alias: 'margined',
        providerId: 'up-a',
        upstreamModel: 'model-a',
        calls: '2',
        usage: usage('20'),
        // 20 in at 3, 20 out at 6; cost 20 at 1 and 20 at 2.
        revenue: { credits: '180', tokens: '0' },
        costCredits: '60',
        marginCredits: '120',
      },
      {
        alias: 'margined',
        providerId: 'up-b',
        upstreamModel: 'model-b',
        calls: '1',
        usage: usage('5'),
        revenue: { credits: '45', tokens: '0' },
        costCredits: null,
        marginCredits: null,
      },
      {
        alias: 'single',
        providerId: 'up-a',
        upstreamModel: 'model-s',
        calls: '1',
        usage: usage('4'),
        // 4 + 4 at 2 = 16; cost 4 + 4 at 1 and 5 per call = 13.
        revenue: { credits: '16', tokens: '0' },
        costCredits: '13',
        marginCredits: '3',
      },
    ]);

    const past = await admin.request('GET', '/admin/reports/margin?from=2020-01-01&to=2020-02-01');
    expect(past.body.data.items).toEqual([]);
    const reversed = await admin.request('GET', '/admin/reports/margin?from=2021-01-01&to=2020-01-01');
    expect(reversed).toMatchObject({ status: 422, body: { code: 'validation_failed' } });
    const customer = createClient(context);
    const email = uniqueEmail('margin-customer');
    await customer.signUp(email, 'a long enough password');
    await customer.logIn(email, 'a long enough password');
    expect((await customer.request('GET', '/admin/reports/margin')).status).toBe(403);
  });

  it('cost prices are edited with the upstreams and shown to admins, completed like a price', async () => {
    const catalog = await admin.request('GET', '/admin/catalog');
    const margined = catalog.body.data.aliases.find((alias: { alias: string }) => alias.alias === 'margined');
    expect(margined.upstreams.map((upstream: { cost: unknown }) => upstream.cost)).toEqual([
      { input: '1', output: '2', cacheRead: '1', cacheWrite: '1', cacheWrite1h: '1', request: '0' },
      null,
    ]);
    const alias = {
      protocols: ['chat_completions'],
      published: true,
      price: { input: '3', output: '6' },
      defaultMaxOutputTokens: 100,
      maxOutputTokens: 1000,
    };
    const both = await admin.request('PUT', '/admin/catalog/aliases/edited', {
      body: {
        ...alias,
        upstreams: [{ providerId: 'up-b', upstreamModel: 'model-b' }],
        cost: { input: '1', output: '1' },
      },
    });
    expect(both).toMatchObject({ status: 422, body: { code: 'validation_failed' } });
    const saved = await admin.request('PUT', '/admin/catalog/aliases/edited', {
      body: {
        ...alias,
        upstreams: [
          { providerId: 'up-a', upstreamModel: 'model-a', cost: { input: '2', output: '3', cacheRead: '0' } },
          { providerId: 'up-b', upstreamModel: 'model-b', cost: null },
        ],
      },
    });
    expect(saved.status).toBe(200);
    const edited = (await admin.request('GET', '/admin/catalog')).body.data.aliases.find(
      (entry: { alias: string }) => entry.alias === 'edited',
    );
    expect(edited.upstreams.map((upstream: { cost: unknown }) => upstream.cost)).toEqual([
      { input: '2', output: '3', cacheRead: '0', cacheWrite: '2', cacheWrite1h: '2', request: '0' },
      null,
    ]);
  });
});
