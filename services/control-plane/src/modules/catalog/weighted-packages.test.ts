import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balancesOf, createFundedKey, internalApi, reserveItem } from '../../../test/billing.ts';
import {
  closeCatalogFixture,
  createCatalogFixture,
  gatewayAlias,
  publicModel,
} from '../../../test/catalog.ts';
import { createClient, type TestClient } from '../../../test/client.ts';
import type { TestContext } from '../../../test/context.ts';
import { syncCatalog } from './catalog.service.ts';
import { CatalogFileError, parseCatalog } from './catalog-file.ts';

/** Weighted packages (docs/billing/rules.md R2b) in the catalogue file, the admin API and the model lists. */

let context: TestContext;
let admin: TestClient;

beforeAll(async () => {
  ({ context, admin } = await createCatalogFixture('weighted-packages'));
});
afterAll(() => closeCatalogFixture(context));

const FILE = `
providers:
  - { id: file-anthropic, kind: anthropic, base_url: "https://api.anthropic.com" }
aliases:
  - { alias: file-cheap, provider: file-anthropic, upstream_model: m, protocols: [messages],
      default_max_output_tokens: 10, max_output_tokens: 100 }
  - { alias: file-dear, provider: file-anthropic, upstream_model: m, protocols: [messages],
      price: { input: 30, output: 150 }, package_rate: 15, default_max_output_tokens: 10, max_output_tokens: 100 }
packages:
  - { id: file-team, name: Team, tokens: 10000, counts: weighted, price: { amount: "4900", currency: USD, exponent: 2 } }
  - { id: file-raw, name: Raw, tokens: 10000, price: { amount: "4900", currency: USD, exponent: 2 } }
`;

async function publicPackage(id: string) {
  const packages = await createClient(context).request('GET', '/catalog/packages');
  return packages.body.data.find((pack: { id: string }) => pack.id === id);
}

const gatewayRate = async (name: string) => (await gatewayAlias(context, name))?.packageRate;

describe('weighted packages', () => {
  it('reads package rates and counting from the catalogue file and shows them to customers and gateways', async () => {
    await syncCatalog(context.deps, parseCatalog(FILE, 'catalog.yaml', {}));
    expect(await publicModel(context, 'file-dear')).toMatchObject({ packageRate: '15' });
    expect(await publicModel(context, 'file-cheap')).toMatchObject({ packageRate: '1' });
    expect(await gatewayRate('file-dear')).toBe('15');
    expect(await publicPackage('file-team')).toMatchObject({ tokens: '10000', counts: 'weighted' });
    expect(await publicPackage('file-raw')).toMatchObject({ counts: 'tokens' });
    expect(() =>
      parseCatalog(FILE.replace('package_rate: 15', 'package_rate: 0'), 'catalog.yaml', {}),
    ).toThrow(CatalogFileError);
    expect(() =>
      parseCatalog(FILE.replace('counts: weighted', 'counts: credits'), 'catalog.yaml', {}),
    ).toThrow(CatalogFileError);
  });

  it('draws a granted weighted package at the alias rate, a raw one at one unit per token', async () => {
    await syncCatalog(context.deps, parseCatalog(FILE, 'catalog.yaml', {}));
    const weighted = await createFundedKey(context, { packages: ['file-team'] });
    const raw = await createFundedKey(context, { packages: ['file-raw'] });
    const api = internalApi(context);
    const call = (key: typeof weighted) => ({
      ...reserveItem(key, 'file-dear', 20n, 10n),
      surface: 'messages' as const,
    });
    const [fromWeighted] = (await api.reserve([call(weighted)])).body.results;
    const [fromRaw] = (await api.reserve([call(raw)])).body.results;
    expect(fromWeighted).toMatchObject({ ok: true, reserved: { tokens: '450', credits: '0' } });
    expect(fromRaw).toMatchObject({ ok: true, reserved: { tokens: '30', credits: '0' } });
    expect(await balancesOf(context, weighted.accountId)).toMatchObject({
      tokens: 9_550n,
      reservedTokens: 450n,
    });
  });

  it('sets an alias rate and a package counting from the admin API', async () => {
    const alias = {
      providerId: 'up-anthropic',
      upstreamModel: 'claude-weighted',
      protocols: ['messages'],
      published: true,
      price: null,
      defaultMaxOutputTokens: 100,
      maxOutputTokens: 1000,
    };
    expect(
      (
        await admin.request('PUT', '/admin/catalog/aliases/admin-dear', {
          body: { ...alias, packageRate: '5' },
        })
      ).status,
    ).toBe(200);
    expect(await publicModel(context, 'admin-dear')).toMatchObject({ packageRate: '5' });
    // Not given: 1, as every alias before package rates.
    await admin.request('PUT', '/admin/catalog/aliases/admin-dear', { body: alias });
    expect(await publicModel(context, 'admin-dear')).toMatchObject({ packageRate: '1' });
    for (const packageRate of ['0', '-2', '1.5', '1000000001']) {
      const refused = await admin.request('PUT', '/admin/catalog/aliases/admin-dear', {
        body: { ...alias, packageRate },
      });
      expect(refused.status, packageRate).toBe(422);
      expect(refused.body.errors.packageRate, packageRate).toBeDefined();
    }

    const pack = {
      name: 'Admin team',
      tokens: '5000',
      validityDays: null,
      aliases: null,
      ceilings: { maxOutputTokens: null, requestsPerMinute: null, concurrency: null },
      price: { amount: '1000', currency: 'USD', exponent: 2 },
      published: true,
    };
    await admin.request('PUT', '/admin/catalog/packages/admin-team', {
      body: { ...pack, counts: 'weighted' },
    });
    expect(await publicPackage('admin-team')).toMatchObject({ counts: 'weighted' });
    const full = await admin.request('GET', '/admin/catalog');
    expect(full.body.data.packages.find((entry: { id: string }) => entry.id === 'admin-team')).toMatchObject({
      counts: 'weighted',
    });
    await admin.request('PUT', '/admin/catalog/packages/admin-team', { body: pack });
    expect(await publicPackage('admin-team')).toMatchObject({ counts: 'tokens' });
  });
});
