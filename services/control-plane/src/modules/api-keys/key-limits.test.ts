import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedCatalog } from '../../../test/billing.ts';
import { createClient, uniqueEmail } from '../../../test/client.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { UsageError } from '../../cli/arguments.ts';
import { COMMANDS } from '../../cli/commands.ts';
import { setAccountRoles } from '../accounts/accounts.service.ts';
import { grantPackage } from '../billing/billing.service.ts';

// Customers choose key ceilings only within what the operator allows (account maxima, plan
// ceilings) and scope keys only to aliases that exist.
let context: TestContext;
const INT4_MAX = 2_147_483_647;

beforeAll(async () => {
  context = await createTestContext('key-limits', {
    TRUST_PROXY: 'true',
    KEY_MAX_REQUESTS_PER_MINUTE: '600',
    KEY_MAX_CONCURRENCY: '16',
  });
  await seedCatalog(context);
}, 60_000);
afterAll(async () => {
  await context.publicApp.mailer.drain();
  await context.close();
});

async function member(label: string, admin = false) {
  const client = createClient(context);
  const email = uniqueEmail(label);
  const password = `pw-${Math.random().toString(36).slice(2)}-limits`;
  const { id } = await client.signUp(email, password);
  if (admin) await setAccountRoles(context.deps.db, id, { admin: true });
  expect((await client.logIn(email, password)).status).toBe(200);
  return Object.assign(client, { id: id as string, email });
}

const createKey = (client: Awaited<ReturnType<typeof member>>, body: Record<string, unknown>) =>
  client.request('POST', '/me/api-keys', { body: { name: 'k', ...body } });

describe('key ceilings a customer may choose', () => {
  it('refuses ceilings above the configured maxima with field errors', async () => {
    const customer = await member('greedy');
    const refused = await createKey(customer, {
      limits: { requestsPerMinute: INT4_MAX, concurrency: INT4_MAX },
    });
    expect(refused.status).toBe(422);
    expect(refused.body.code).toBe('validation_failed');
    expect(refused.body.errors['limits.requestsPerMinute']).toEqual(['At most 600 for this account.']);
    expect(refused.body.errors['limits.concurrency']).toEqual(['At most 16 for this account.']);
    expect((await createKey(customer, { limits: { requestsPerMinute: 601 } })).status).toBe(422);

    const accepted = await createKey(customer, { limits: { requestsPerMinute: 600, concurrency: 16 } });
    expect(accepted.status).toBe(201);
    expect(accepted.body.data.key.limits).toMatchObject({ requestsPerMinute: 600, concurrency: 16 });
    expect((await customer.request('GET', '/me/api-keys')).body.data).toHaveLength(1);
  });

  it('refuses unknown and unpublished aliases in a scope', async () => {
    const customer = await member('scope');
    const unknown = await createKey(customer, { scope: ['priced', 'no-such-model'] });
    expect(unknown.status).toBe(422);
    expect(unknown.body.errors.scope).toEqual(['Unknown model alias: no-such-model.']);
    const hidden = await createKey(customer, { scope: ['hidden'] });
    expect(hidden.status).toBe(422);
    expect(hidden.body.errors.scope).toEqual(['Unknown model alias: hidden.']);
    const known = await createKey(customer, { scope: ['priced', 'tokens-only'] });
    expect(known.status).toBe(201);
    expect(known.body.data.key.scope).toEqual(['priced', 'tokens-only']);
  });

  it("is bounded by the plan ceilings of the account's packages", async () => {
    const customer = await member('plan');
    // Package "exact": requests_per_minute 60, concurrency 3.
    await grantPackage(context.deps, { accountId: customer.id, packageId: 'exact', cause: 'test grant' });
    const refused = await createKey(customer, { limits: { requestsPerMinute: 61, concurrency: 4 } });
    expect(refused.status).toBe(422);
    expect(Object.keys(refused.body.errors).sort()).toEqual([
      'limits.concurrency',
      'limits.requestsPerMinute',
    ]);
    const defaults = await createKey(customer, {});
    expect(defaults.status).toBe(201);
    // The default concurrency (4) is above the plan's 3: the key gets the plan's ceiling.
    expect(defaults.body.data.key.limits.concurrency).toBe(3);
    // The plan's output ceiling (500) clamps each request; it does not lower or bound the key.
    expect(defaults.body.data.key.limits.maxOutputTokens).toBe(
      context.deps.config.keyDefaults.maxOutputTokens,
    );
    expect((await createKey(customer, { limits: { maxOutputTokens: 1000 } })).status).toBe(201);
    const maxima = await customer.request('GET', '/me/api-keys/limits');
    expect(maxima.body.data.effective).toMatchObject({ requestsPerMinute: 60, concurrency: 3 });
    expect(maxima.body.data.account).toMatchObject({ requestsPerMinute: 600, concurrency: 16 });
    expect(maxima.body.data.defaults).toMatchObject({ requestsPerMinute: 60, concurrency: 3 });
  });

  it("gives a new key the rate and concurrency of the account's package, not the smaller configured default", async () => {
    const customer = await member('bought-600');
    await grantPackage(context.deps, { accountId: customer.id, packageId: 'exact', cause: 'test grant' });
    // A package advertised at 600/min and 12 at once (entitlements keep the plan they were sold with).
    await context.deps.db
      .updateTable('entitlements')
      .set({ requests_per_minute: 600, concurrency: 12 })
      .where('account_id', '=', customer.id)
      .execute();
    const maxima = await customer.request('GET', '/me/api-keys/limits');
    expect(maxima.body.data.defaults).toEqual({
      ...maxima.body.data.defaults,
      requestsPerMinute: 600,
      concurrency: 12,
      maxOutputTokens: context.deps.config.keyDefaults.maxOutputTokens,
    });
    const created = await createKey(customer, {});
    expect(created.body.data.key.limits).toMatchObject({ requestsPerMinute: 600, concurrency: 12 });
    // Without a package with ceilings, the configured defaults (60/min, 4 at once).
    const plain = await createKey(await member('no-package'), {});
    expect(plain.body.data.key.limits).toMatchObject({ requestsPerMinute: 60, concurrency: 4 });
  });
});

describe('PATCH /admin/accounts/{id}/limits', () => {
  it('sets per-account maxima, lowers existing keys, and bounds new ones', async () => {
    const admin = await member('limits-admin', true);
    const customer = await member('limited');
    const before = await createKey(customer, { limits: { requestsPerMinute: 100, concurrency: 2 } });
    expect(before.status).toBe(201);

    const set = await admin.request('PATCH', `/admin/accounts/${customer.id}/limits`, {
      body: { requestsPerMinute: 10, concurrency: 8 },
    });
    expect(set.status).toBe(200);
    expect(set.body.data.account).toMatchObject({ requestsPerMinute: 10, concurrency: 8 });
    expect(set.body.data.loweredKeyIds).toEqual([before.body.data.key.id]);
    const [kept] = (await customer.request('GET', '/me/api-keys')).body.data;
    expect(kept.limits).toMatchObject({ requestsPerMinute: 10, concurrency: 2 });

    const over = await createKey(customer, { limits: { requestsPerMinute: 11 } });
    expect(over.status).toBe(422);
    expect(over.body.errors['limits.requestsPerMinute']).toEqual(['At most 10 for this account.']);
    expect((await createKey(customer, { limits: { requestsPerMinute: 10, concurrency: 8 } })).status).toBe(
      201,
    );

    // null: back to the configured default.
    const reset = await admin.request('PATCH', `/admin/accounts/${customer.id}/limits`, {
      body: { requestsPerMinute: null },
    });
    expect(reset.body.data.account).toMatchObject({ requestsPerMinute: 600, concurrency: 8 });
  });

  it('is admin-only, validates its body and answers not_found for unknown accounts', async () => {
    const admin = await member('limits-admin-2', true);
    const customer = await member('limits-self');
    const forbidden = await customer.request('PATCH', `/admin/accounts/${customer.id}/limits`, {
      body: { requestsPerMinute: 100_000 },
    });
    expect(forbidden.status).toBe(403);
    for (const body of [
      { concurrency: INT4_MAX + 1 },
      { concurrency: 0 },
      { concurrency: '5' },
      { extra: 1 },
    ]) {
      const invalid = await admin.request('PATCH', `/admin/accounts/${customer.id}/limits`, { body });
      expect(invalid.status).toBe(422);
      expect(invalid.body.code).toBe('validation_failed');
    }
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const missing = await admin.request('PATCH', `/admin/accounts/${id}/limits`, {
        body: { concurrency: 2 },
      });
      expect(missing.status).toBe(404);
    }
  });
});

describe('tollgate-admin set-key-limits', () => {
  it('sets and resets an account maximum from the CLI', async () => {
    const customer = await member('cli-limits');
    const run = (options: Record<string, string>) =>
      COMMANDS['set-key-limits']?.run(context.deps, { positionals: [customer.email], options });
    expect(await run({ 'requests-per-minute': '7' })).toMatchObject({ account: { requestsPerMinute: 7 } });
    expect((await createKey(customer, { limits: { requestsPerMinute: 8 } })).status).toBe(422);
    expect((await createKey(customer, { limits: { requestsPerMinute: 7 } })).status).toBe(201);
    await expect(run({ concurrency: '2147483648' })).rejects.toThrow(UsageError);
    await expect(run({ concurrency: 'lots' })).rejects.toThrow(UsageError);
    expect(await run({ 'requests-per-minute': 'default' })).toMatchObject({
      account: { requestsPerMinute: 600 },
    });
  });
});
