import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_CATALOG } from '../../../test/billing.ts';
import { closeCatalogFixture, createCatalogFixture, gatewayAlias } from '../../../test/catalog.ts';
import { createClient, type TestClient, uniqueEmail } from '../../../test/client.ts';
import type { TestContext } from '../../../test/context.ts';
import { parseCatalog } from './catalog-file.ts';

let context: TestContext;
let admin: TestClient;

beforeAll(async () => {
  ({ context, admin } = await createCatalogFixture('alias-upstreams'));
});
afterAll(() => closeCatalogFixture(context));

const alias = {
  protocols: ['chat_completions'],
  published: true,
  price: { input: '2', output: '5' },
  defaultMaxOutputTokens: 100,
  maxOutputTokens: 1000,
};

describe('PUT /admin/catalog/aliases/{alias} with upstreams', () => {
  it('saves the list; gateways and admins read it, the first of the lowest priority is the primary', async () => {
    const upstreams = [
      { providerId: 'up-anthropic', upstreamModel: 'backup-model', priority: 1 },
      {
        providerId: 'up-openai',
        upstreamModel: 'main-model',
        weight: 3,
        maxConcurrency: 4,
        requestsPerMinute: 100,
      },
      { providerId: 'up-anthropic', upstreamModel: 'second-main', weight: 1 },
    ];
    const saved = await admin.request('PUT', '/admin/catalog/aliases/routed', {
      body: { ...alias, upstreams },
    });
    expect(saved.status).toBe(200);
    const expected = [
      {
        providerId: 'up-anthropic',
        upstreamModel: 'backup-model',
        priority: 1,
        weight: 1,
        maxConcurrency: null,
      },
      {
        providerId: 'up-openai',
        upstreamModel: 'main-model',
        priority: 0,
        weight: 3,
        maxConcurrency: 4,
        requestsPerMinute: 100,
      },
      { providerId: 'up-anthropic', upstreamModel: 'second-main', priority: 0, weight: 1 },
    ];
    expect(await gatewayAlias(context, 'routed')).toMatchObject({
      providerId: 'up-openai',
      upstreamModel: 'main-model',
      upstreams: expected,
    });
    const full = await admin.request('GET', '/admin/catalog');
    expect(full.body.data.aliases.find((entry: { alias: string }) => entry.alias === 'routed')).toMatchObject(
      {
        providerId: 'up-openai',
        upstreams: expected,
      },
    );
    // Customers see the alias, never its upstreams.
    const models = await createClient(context).request('GET', '/catalog/models');
    const text = JSON.stringify(models.body);
    expect(text).toContain('routed');
    for (const secret of ['main-model', 'backup-model', 'up-openai', 'up-anthropic']) {
      expect(text).not.toContain(secret);
    }

    // Back to the shorthand: one upstream again.
    await admin.request('PUT', '/admin/catalog/aliases/routed', {
      body: { ...alias, providerId: 'up-openai', upstreamModel: 'only-model' },
    });
    expect((await gatewayAlias(context, 'routed'))?.upstreams).toEqual([
      { providerId: 'up-openai', upstreamModel: 'only-model', priority: 0, weight: 1 },
    ]);
  });

  it('refuses an invalid list with validation_failed naming the field', async () => {
    const cases: Array<[object, string]> = [
      [{ upstreams: [{ providerId: 'nowhere', upstreamModel: 'm' }] }, 'upstreams.0.providerId'],
      [
        {
          upstreams: [
            { providerId: 'up-openai', upstreamModel: 'm' },
            { providerId: 'up-openai', upstreamModel: 'm', priority: 2 },
          ],
        },
        'upstreams.1.upstreamModel',
      ],
      [
        {
          providerId: 'up-openai',
          upstreamModel: 'm',
          upstreams: [{ providerId: 'up-openai', upstreamModel: 'n' }],
        },
        'upstreams',
      ],
      [{}, 'providerId'],
      [{ upstreams: [] }, 'upstreams'],
      [{ upstreams: [{ providerId: 'up-openai', upstreamModel: 'm', weight: 0 }] }, 'upstreams.0.weight'],
      [
        { upstreams: [{ providerId: 'up-openai', upstreamModel: 'm', priority: -1 }] },
        'upstreams.0.priority',
      ],
      [
        { upstreams: [{ providerId: 'up-openai', upstreamModel: 'm', maxConcurrency: 0 }] },
        'upstreams.0.maxConcurrency',
      ],
    ];
    for (const [change, field] of cases) {
      const refused = await admin.request('PUT', '/admin/catalog/aliases/refused', {
        body: { ...alias, ...change },
      });
      expect(refused, JSON.stringify(change)).toMatchObject({
        status: 422,
        body: { code: 'validation_failed' },
      });
      expect(Object.keys(refused.body.errors ?? {})).toContain(field);
    }
    expect(await gatewayAlias(context, 'refused')).toBeUndefined();
  });

  it('is for admins only', async () => {
    const client = createClient(context);
    const email = uniqueEmail('routing-customer');
    await client.signUp(email, 'a long enough password');
    await client.logIn(email, 'a long enough password');
    const refused = await client.request('PUT', '/admin/catalog/aliases/priced', {
      body: { ...alias, upstreams: [{ providerId: 'up-openai', upstreamModel: 'm' }] },
    });
    expect(refused).toMatchObject({ status: 403, body: { code: 'forbidden' } });
  });
});

describe('the catalogue file', () => {
  const file = (aliasLine: string) => TEST_CATALOG.replace(/aliases:\n/, `aliases:\n  - ${aliasLine}\n`);

  it('takes upstreams with priorities and weights, or the shorthand', () => {
    const catalog = parseCatalog(
      file(`{ alias: many, protocols: [messages], default_max_output_tokens: 1, max_output_tokens: 1,
      upstreams: [{ provider: up-openai, upstream_model: a, weight: 2, max_concurrency: 5 }, { provider: up-anthropic, upstream_model: b, priority: 1, requests_per_minute: 60 }] }`),
      'test',
      {},
    );
    expect(catalog.aliases[0]?.upstreams).toEqual([
      { provider: 'up-openai', upstream_model: 'a', priority: 0, weight: 2, max_concurrency: 5 },
      { provider: 'up-anthropic', upstream_model: 'b', priority: 1, weight: 1, requests_per_minute: 60 },
    ]);
  });

  it('refuses both forms, an unknown provider and an upstream listed twice', () => {
    const bad = [
      `{ alias: x, provider: up-openai, upstream_model: a, upstreams: [{ provider: up-openai, upstream_model: b }],
      protocols: [messages], default_max_output_tokens: 1, max_output_tokens: 1 }`,
      `{ alias: x, upstreams: [{ provider: nowhere, upstream_model: b }],
      protocols: [messages], default_max_output_tokens: 1, max_output_tokens: 1 }`,
      `{ alias: x, upstreams: [{ provider: up-openai, upstream_model: b }, { provider: up-openai, upstream_model: b }],
      protocols: [messages], default_max_output_tokens: 1, max_output_tokens: 1 }`,
      `{ alias: x, protocols: [messages], default_max_output_tokens: 1, max_output_tokens: 1 }`,
    ];
    for (const line of bad) expect(() => parseCatalog(file(line), 'test', {}), line).toThrow(/aliases/);
  });
});
