import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, uniqueEmail } from '../../../test/client.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { setAccountRoles } from '../accounts/accounts.service.ts';
import { CatalogFileError, parseCatalog } from './catalog-file.ts';

// A provider's credential is a name the gateway sends to the provider's base URL: only names in
// the provider namespace are accepted, so no entry can name HOME, a port or a service secret.
let context: TestContext;

beforeAll(async () => {
  context = await createTestContext('catalog-credentials', { TRUST_PROXY: 'true' });
}, 60_000);
afterAll(async () => {
  await context.publicApp.mailer.drain();
  await context.close();
});

function catalogWith(credential: string): string {
  return `providers:\n  - { id: up, kind: openai, base_url: "http://127.0.0.1:9/v1", credential: ${credential} }\n`;
}

describe('catalogue file credentials', () => {
  it('accepts a name inside the namespace and null', () => {
    expect(parseCatalog(catalogWith('TOLLGATE_PROVIDER_OPENAI'), 'c.yaml', {}).providers[0]?.credential).toBe(
      'TOLLGATE_PROVIDER_OPENAI',
    );
    expect(parseCatalog(catalogWith('null'), 'c.yaml', {}).providers[0]?.credential).toBeNull();
  });

  it.each(['HOME', 'GATEWAY_PORT', 'INTERNAL_TOKEN_SECRET', 'OPENAI_API_KEY', 'TOLLGATE_PROVIDER_'])(
    'refuses %s with a message naming the field and the prefix',
    (name) => {
      expect(() => parseCatalog(catalogWith(name), 'c.yaml', {})).toThrow(CatalogFileError);
      expect(() => parseCatalog(catalogWith(name), 'c.yaml', {})).toThrow(
        /providers\.up\.credential: must start with TOLLGATE_PROVIDER_/,
      );
    },
  );

  it('takes a pool of names, each inside the namespace, none twice', () => {
    const pool = '[TOLLGATE_PROVIDER_A, TOLLGATE_PROVIDER_B]';
    expect(parseCatalog(catalogWith(pool), 'c.yaml', {}).providers[0]?.credential).toEqual([
      'TOLLGATE_PROVIDER_A',
      'TOLLGATE_PROVIDER_B',
    ]);
    expect(() => parseCatalog(catalogWith('[TOLLGATE_PROVIDER_A, HOME]'), 'c.yaml', {})).toThrow(
      /providers\.up\.credential: must start with TOLLGATE_PROVIDER_/,
    );
    expect(() =>
      parseCatalog(catalogWith('[TOLLGATE_PROVIDER_A, TOLLGATE_PROVIDER_A]'), 'c.yaml', {}),
    ).toThrow(/named twice/);
  });

  it('follows a configured prefix', () => {
    expect(
      parseCatalog(catalogWith('ACME_KEY_OPENAI'), 'c.yaml', {}, 'ACME_KEY_').providers[0]?.credential,
    ).toBe('ACME_KEY_OPENAI');
    expect(() => parseCatalog(catalogWith('TOLLGATE_PROVIDER_OPENAI'), 'c.yaml', {}, 'ACME_KEY_')).toThrow(
      /must start with ACME_KEY_/,
    );
  });
});

describe('PUT /admin/catalog/providers/{id}', () => {
  it('refuses a credential name outside the namespace with 422, accepts one inside', async () => {
    const admin = createClient(context);
    const email = uniqueEmail('catalog-admin');
    const password = 'catalog-admin-password';
    const { id } = await admin.signUp(email, password);
    await setAccountRoles(context.deps.db, id, { admin: true });
    expect((await admin.logIn(email, password)).status).toBe(200);

    const put = (credentialRef: string | null) =>
      admin.request('PUT', '/admin/catalog/providers/evil', {
        body: { kind: 'openai', baseUrl: 'https://attacker.example/v1', credentialRef },
      });
    for (const name of ['HOME', 'GATEWAY_PORT', 'KEY_PEPPER']) {
      const refused = await put(name);
      expect(refused.status).toBe(422);
      expect(refused.body.code).toBe('validation_failed');
      expect(refused.body.errors.credentialRef[0]).toMatch(/must start with TOLLGATE_PROVIDER_/);
    }
    const stored = await context.deps.db
      .selectFrom('providers')
      .select('id')
      .where('id', '=', 'evil')
      .executeTakeFirst();
    expect(stored).toBeUndefined();
    expect((await put('TOLLGATE_PROVIDER_EVIL')).status).toBeLessThan(300);
    expect((await put(null)).status).toBeLessThan(300);

    // A pool: every name checked, the admin view lists it whole, credentialRef its first.
    const putPool = (credentialRefs: string[], credentialRef: string | null = null) =>
      admin.request('PUT', '/admin/catalog/providers/pooled', {
        body: { kind: 'openai', baseUrl: 'https://up.example/v1', credentialRef, credentialRefs },
      });
    const outside = await putPool(['TOLLGATE_PROVIDER_A', 'KEY_PEPPER']);
    expect(outside.status).toBe(422);
    expect(outside.body.errors['credentialRefs.1'][0]).toMatch(/must start with TOLLGATE_PROVIDER_/);
    expect((await putPool(['TOLLGATE_PROVIDER_A', 'TOLLGATE_PROVIDER_A'])).status).toBe(422);
    expect((await putPool(['TOLLGATE_PROVIDER_A'], 'TOLLGATE_PROVIDER_B')).status).toBe(422);
    expect((await putPool(['TOLLGATE_PROVIDER_A', 'TOLLGATE_PROVIDER_B'])).status).toBe(200);
    const catalog = await admin.request('GET', '/admin/catalog');
    const pooled = catalog.body.data.providers.find((provider: { id: string }) => provider.id === 'pooled');
    expect(pooled).toMatchObject({
      credentialRef: 'TOLLGATE_PROVIDER_A',
      credentialRefs: ['TOLLGATE_PROVIDER_A', 'TOLLGATE_PROVIDER_B'],
    });
    // Back to one credential: the pool is gone.
    expect((await put('TOLLGATE_PROVIDER_EVIL')).status).toBe(200);
    expect((await putPool(['TOLLGATE_PROVIDER_C'])).status).toBe(200);
    const single = (await admin.request('GET', '/admin/catalog')).body.data.providers.find(
      (provider: { id: string }) => provider.id === 'pooled',
    );
    expect(single).toMatchObject({
      credentialRef: 'TOLLGATE_PROVIDER_C',
      credentialRefs: ['TOLLGATE_PROVIDER_C'],
    });
  }, 60_000);
});
