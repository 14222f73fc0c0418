import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  closeCatalogFixture,
  createCatalogFixture,
  gatewayAlias,
  publicModel,
} from '../../../test/catalog.ts';
import type { TestClient } from '../../../test/client.ts';
import type { TestContext } from '../../../test/context.ts';
import { syncCatalog } from './catalog.service.ts';
import { CatalogFileError, parseCatalog } from './catalog-file.ts';

let context: TestContext;
let admin: TestClient;

beforeAll(async () => {
  ({ context, admin } = await createCatalogFixture('alias-prices'));
});
afterAll(() => closeCatalogFixture(context));

const alias = {
  providerId: 'up-anthropic',
  upstreamModel: 'claude-priced',
  protocols: ['messages'],
  published: true,
  defaultMaxOutputTokens: 100,
  maxOutputTokens: 1000,
};

const publicPrice = async (name: string) => (await publicModel(context, name))?.price;
const gatewayPrice = async (name: string) => (await gatewayAlias(context, name))?.price;

describe('alias prices per usage part', () => {
  it('saves every part from the admin API and shows them to customers, admins and gateways', async () => {
    const price = {
      input: '30',
      output: '150',
      cacheRead: '3',
      cacheWrite: '38',
      cacheWrite1h: '60',
      request: '7',
    };
    const saved = await admin.request('PUT', '/admin/catalog/aliases/cached', { body: { ...alias, price } });
    expect(saved.status).toBe(200);
    expect(await publicPrice('cached')).toEqual(price);
    expect(await gatewayPrice('cached')).toEqual(price);
    const full = await admin.request('GET', '/admin/catalog');
    expect(full.body.data.aliases.find((entry: { alias: string }) => entry.alias === 'cached').price).toEqual(
      price,
    );
  });

  it('fills the parts not given so an input and output price charges what it did before', async () => {
    await admin.request('PUT', '/admin/catalog/aliases/plain', {
      body: { ...alias, price: { input: '4', output: '9' } },
    });
    expect(await publicPrice('plain')).toEqual({
      input: '4',
      output: '9',
      cacheRead: '4',
      cacheWrite: '4',
      cacheWrite1h: '4',
      request: '0',
    });
    // A five-minute write price given alone is the one-hour price too.
    await admin.request('PUT', '/admin/catalog/aliases/plain', {
      body: { ...alias, price: { input: '4', output: '9', cacheWrite: '5' } },
    });
    expect(await publicPrice('plain')).toMatchObject({ cacheRead: '4', cacheWrite: '5', cacheWrite1h: '5' });
    // Packages only: no price at all.
    await admin.request('PUT', '/admin/catalog/aliases/plain', { body: { ...alias, price: null } });
    expect(await publicPrice('plain')).toBeNull();
    expect(await gatewayPrice('plain')).toBeNull();
  });

  it('refuses a price part that is not a non-negative integer, naming it, and saves nothing', async () => {
    for (const [field, value] of [
      ['cacheRead', '-1'],
      ['cacheWrite1h', '1.5'],
      ['request', '99999999999999999999'],
    ] as const) {
      const refused = await admin.request('PUT', '/admin/catalog/aliases/refused', {
        body: { ...alias, price: { input: '1', output: '1', [field]: value } },
      });
      expect(refused.status).toBe(422);
      expect(refused.body.errors[`price.${field}`]).toBeDefined();
    }
    expect(await publicPrice('refused')).toBeUndefined();
  });

  it('reads the parts from the catalogue file, the old input and output form included', async () => {
    const catalog = parseCatalog(
      `
providers:
  - { id: file-anthropic, kind: anthropic, base_url: "https://api.anthropic.com" }
aliases:
  - { alias: file-cached, provider: file-anthropic, upstream_model: m, protocols: [messages],
      price: { input: 30, output: 150, cache_read: 3, cache_write: 38, cache_write_1h: 60, request: 7 },
      default_max_output_tokens: 10, max_output_tokens: 10 }
  - { alias: file-plain, provider: file-anthropic, upstream_model: m, protocols: [messages],
      price: { input: 2, output: 5 }, default_max_output_tokens: 10, max_output_tokens: 10 }
`,
      'catalog.yaml',
      {},
    );
    await syncCatalog(context.deps, catalog);
    expect(await publicPrice('file-cached')).toEqual({
      input: '30',
      output: '150',
      cacheRead: '3',
      cacheWrite: '38',
      cacheWrite1h: '60',
      request: '7',
    });
    expect(await publicPrice('file-plain')).toEqual({
      input: '2',
      output: '5',
      cacheRead: '2',
      cacheWrite: '2',
      cacheWrite1h: '2',
      request: '0',
    });
    expect(() =>
      parseCatalog(
        `aliases:
  - { alias: a, provider: p, upstream_model: m, protocols: [messages], default_max_output_tokens: 1,
      max_output_tokens: 1, price: { input: 1, output: 1, cache_reads: 1 } }`,
        'catalog.yaml',
        {},
      ),
    ).toThrow(CatalogFileError);
  });
});
