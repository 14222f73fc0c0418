import { apiKeyDigest, GatewayCatalog, KeyStatus, ResolvedKey } from '@tollgate/schemas';
import { SignJWT } from 'jose';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  endItem,
  type FundedKey,
  internalApi,
  reserveItem,
  seedCatalog,
  settleItem,
} from '../../../test/billing.ts';
import { createClient, type TestClient, uniqueEmail } from '../../../test/client.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { findAccountByEmail, setAccountRoles } from '../accounts/accounts.service.ts';
import { changeCredit, grantPackage } from './billing.service.ts';

let context: TestContext;
let api: ReturnType<typeof internalApi>;

beforeAll(async () => {
  context = await createTestContext('billing-routes', { TRUST_PROXY: 'true' }, { hotTier: true });
  await seedCatalog(context);
  api = internalApi(context);
});
afterAll(async () => {
  await context.publicApp.mailer.drain();
  await context.close();
});

async function customer(): Promise<{ client: TestClient; key: FundedKey }> {
  const client = createClient(context);
  const email = uniqueEmail('billing');
  await client.signUp(email, 'a long enough password');
  expect((await client.logIn(email, 'a long enough password')).status).toBe(200);
  const account = (await findAccountByEmail(context.deps.db, email))!;
  const created = await client.request('POST', '/me/api-keys', { body: { name: 'work' } });
  expect(created.status).toBe(201);
  const { key, secret } = created.body.data;
  return {
    client,
    key: { accountId: account.id, email, keyId: key.id, secret, digest: apiKeyDigest(secret) },
  };
}

async function meteredCall(key: FundedKey, alias: string, input: bigint, output: bigint) {
  const item = reserveItem(key, alias, input, output);
  const reserved = await api.reserve([item]);
  expect(reserved.body.results[0]?.ok).toBe(true);
  await api.finish([settleItem(key, item.reservationId, alias, input, output)]);
  return item.reservationId;
}

describe('GET /me/balance, /me/entitlements, /me/activity, /me/usage/summary', () => {
  it('report balances and each metered call as integer strings', async () => {
    const { client, key } = await customer();
    await grantPackage(context.deps, { accountId: key.accountId, packageId: 'small', cause: 'test' });
    await changeCredit(context.deps, {
      accountId: key.accountId,
      amount: 5000n,
      kind: 'grant',
      cause: 'test',
    });
    const first = await meteredCall(key, 'tokens-only', 10n, 20n);
    const second = await meteredCall(key, 'tokens-only', 1n, 2n);
    const third = await meteredCall(key, 'priced', 100n, 100n);
    // A call in flight shows as reserved.
    await api.reserve([reserveItem(key, 'tokens-only', 50n, 50n)]);

    const balance = await client.request('GET', '/me/balance');
    expect(balance.status).toBe(200);
    // 1,000 - 30 - 3 - 200 (priced draws from the package first) - 100 in flight.
    expect(balance.body.data).toEqual({
      remaining: { tokens: '667', credits: '5000' },
      reserved: { tokens: '100', credits: '0' },
    });

    const entitlements = await client.request('GET', '/me/entitlements');
    expect(entitlements.body.data).toHaveLength(1);
    expect(entitlements.body.data[0]).toMatchObject({
      packageId: 'small',
      granted: '1000',
      remaining: '667',
      reserved: '100',
      expired: false,
    });

    // Activity lists finished calls (the hot tier writes a call once it has finished; the one in
    // flight shows only in the balance).
    const page1 = await client.request('GET', '/me/activity?limit=2');
    expect(page1.status).toBe(200);
    expect(page1.body.data.items).toHaveLength(2);
    const page2 = await client.request('GET', `/me/activity?limit=2&cursor=${page1.body.data.nextCursor}`);
    expect(page2.body.data.items).toHaveLength(1);
    expect(page2.body.data.nextCursor).toBeNull();
    const ids = [...page1.body.data.items, ...page2.body.data.items].map((item: { id: string }) => item.id);
    expect(ids).toEqual(expect.arrayContaining([first, second, third]));
    const settled = [...page1.body.data.items, ...page2.body.data.items].find(
      (item: { id: string }) => item.id === first,
    );
    expect(settled).toMatchObject({
      keyId: key.keyId,
      alias: 'tokens-only',
      surface: 'messages',
      status: 'settled',
      outcome: 'ok',
      httpStatus: 200,
      inputTokens: '10',
      outputTokens: '20',
      charged: { tokens: '30', credits: '0' },
    });

    const filtered = await client.request('GET', `/me/activity?keyId=${crypto.randomUUID()}`);
    expect(filtered.body.data.items).toEqual([]);

    const today = new Date().toISOString().slice(0, 10);
    const summary = await client.request('GET', `/me/usage/summary?from=${today}&to=${today}`);
    expect(summary.status).toBe(200);
    expect(summary.body.data).toEqual([
      {
        day: today,
        alias: 'priced',
        requests: 1,
        inputTokens: '100',
        outputTokens: '100',
        cacheReadTokens: '0',
        cacheWriteTokens: '0',
        cacheWrite1hTokens: '0',
        charged: { tokens: '200', credits: '0' },
      },
      {
        day: today,
        alias: 'tokens-only',
        requests: 2,
        inputTokens: '11',
        outputTokens: '22',
        cacheReadTokens: '0',
        cacheWriteTokens: '0',
        cacheWrite1hTokens: '0',
        charged: { tokens: '33', credits: '0' },
      },
    ]);
  });

  it('validates query parameters and needs a session', async () => {
    const { client } = await customer();
    const bad = await client.request('GET', '/me/usage/summary?from=2026-01-02&to=2026-01-01');
    expect(bad).toMatchObject({ status: 422, body: { code: 'validation_failed' } });
    const badCursor = await client.request('GET', '/me/activity?cursor=nonsense');
    expect(badCursor.body.code).toBe('validation_failed');
    const anonymous = await createClient(context).request('GET', '/me/balance');
    expect(anonymous).toMatchObject({ status: 401, body: { code: 'unauthenticated' } });
  });

  it('pages through calls created within the same millisecond without skipping any', async () => {
    const { client, key } = await customer();
    const other = await client.request('POST', '/me/api-keys', { body: { name: 'other' } });
    const otherKeyId: string = other.body.data.key.id;
    // Postgres keeps microseconds; a cursor cut to milliseconds would skip the later two.
    const rows = [
      ['2026-03-01T10:00:00.123456Z', key.keyId],
      ['2026-03-01T10:00:00.123400Z', otherKeyId],
      ['2026-03-01T10:00:00.123300Z', key.keyId],
      ['2026-03-01T10:00:00.123300Z', key.keyId],
      ['2026-03-01T09:00:00Z', key.keyId],
    ].map(([createdAt, keyId]) => ({
      id: crypto.randomUUID(),
      account_id: key.accountId,
      key_id: keyId!,
      alias: 'priced',
      surface: 'chat_completions',
      status: 'released' as const,
      created_at: createdAt!,
    }));
    for (const row of rows) {
      await sql`
        insert into reservations (id, account_id, key_id, alias, surface, status, created_at)
        values (${row.id}::uuid, ${row.account_id}::uuid, ${row.key_id}::uuid, ${row.alias}, ${row.surface},
                ${row.status}, ${row.created_at}::timestamptz)
      `.execute(context.deps.db);
    }
    // Written behind the billing functions' back: record the keys' use as they would.
    await sql`
      update api_keys k set first_used_at = f.first, last_used_at = f.last
      from (select key_id, min(created_at) as first, max(created_at) as last from reservations group by key_id) f
      where f.key_id = k.id
    `.execute(context.deps.db);
    // Newest first; equal times in descending id order.
    const expected = [...rows]
      .sort((a, b) =>
        a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1,
      )
      .map((row) => row.id);

    const walk = async (query: string) => {
      const seen: string[] = [];
      let cursor = '';
      for (let page = 0; page < 10; page += 1) {
        const path: string = `/me/activity?limit=1${query}${cursor ? `&cursor=${cursor}` : ''}`;
        const response = await client.request('GET', path);
        expect(response.status).toBe(200);
        seen.push(...response.body.data.items.map((item: { id: string }) => item.id));
        cursor = response.body.data.nextCursor ?? '';
        if (!cursor) break;
      }
      return seen;
    };
    expect(await walk('')).toEqual(expected);
    expect(await walk(`&keyId=${key.keyId}`)).toEqual(expected.filter((id) => id !== rows[1]!.id));

    // Cursors of other instants or ids are refused, not passed on to Postgres.
    for (const text of [
      '2026-02-31T00:00:00.000Z|',
      '2026-03-01T10:00:00Z|not-a-uuid-----------------------------',
    ]) {
      const cursor = Buffer.from(`${text}${text.endsWith('|') ? crypto.randomUUID() : ''}`).toString(
        'base64url',
      );
      const refused = await client.request('GET', `/me/activity?cursor=${cursor}`);
      expect(refused).toMatchObject({ status: 422, body: { code: 'validation_failed' } });
    }
  });

  it("lists one key's calls between its first and last use, and none for a key never used", async () => {
    const { client, key } = await customer();
    await changeCredit(context.deps, {
      accountId: key.accountId,
      amount: 1_000_000n,
      kind: 'grant',
      cause: 'test',
    });
    const unused = await client.request('POST', '/me/api-keys', { body: { name: 'unused' } });
    const unusedKeyId: string = unused.body.data.key.id;
    const use = async (keyId: string) => {
      const { rows } = await sql<{ first: Date | null; last: Date | null }>`
        select first_used_at as first, last_used_at as last from api_keys where id = ${keyId}::uuid
      `.execute(context.deps.db);
      return { first: rows[0]!.first?.toISOString() ?? null, last: rows[0]!.last?.toISOString() ?? null };
    };
    expect(await use(key.keyId)).toEqual({ first: null, last: null });

    const first = await meteredCall(key, 'priced', 3n, 4n);
    const second = await meteredCall(key, 'priced', 5n, 6n);
    const { rows } = await sql<{ created_at: Date }>`
      select created_at from reservations where id = ${first}::uuid
    `.execute(context.deps.db);
    const reservedAt = rows[0]!.created_at;
    // The first reservation's own time; a second call within the hour changes nothing.
    expect(await use(key.keyId)).toEqual({ first: reservedAt.toISOString(), last: reservedAt.toISOString() });

    // Settles of reservations Postgres never kept (forgotten by a crash) write their rows with the
    // gateway's time: an hour before the first use, and (a long call) two hours after the last.
    // The recorded span widens to both, so both rows are listed.
    const early = crypto.randomUUID();
    const late = crypto.randomUUID();
    const earlyAt = new Date(reservedAt.getTime() - 3_600_000).toISOString();
    const lateAt = new Date(reservedAt.getTime() + 7_200_000).toISOString();
    await api.finish([
      { ...settleItem(key, early, 'priced', 1n, 1n), occurredAt: earlyAt },
      { ...settleItem(key, late, 'priced', 1n, 1n), occurredAt: lateAt },
    ]);
    expect(await use(key.keyId)).toEqual({ first: earlyAt, last: lateAt });

    const mine = await client.request('GET', `/me/activity?keyId=${key.keyId}`);
    expect(mine.status).toBe(200);
    expect(mine.body.data.items.map((item: { id: string }) => item.id)).toEqual([late, second, first, early]);
    const none = await client.request('GET', `/me/activity?keyId=${unusedKeyId}`);
    expect(none).toMatchObject({ status: 200, body: { data: { items: [], nextCursor: null } } });
    expect(await use(unusedKeyId)).toEqual({ first: null, last: null });
  });

  it("shows one call's receipt: usage, prices, what the package and the credit gave; another account's is not_found", async () => {
    const { client, key } = await customer();
    await grantPackage(context.deps, { accountId: key.accountId, packageId: 'small', cause: 'test' });
    await changeCredit(context.deps, {
      accountId: key.accountId,
      amount: 100_000n,
      kind: 'grant',
      cause: 'test',
    });
    // 1,000 package tokens cover part of 900 + 300; the rest is charged in credit at the alias's prices.
    const id = await meteredCall(key, 'priced', 900n, 300n);
    const receipt = await client.request('GET', `/me/activity/${id}`);
    expect(receipt.status).toBe(200);
    const { data } = receipt.body;
    expect(data).toMatchObject({
      requestId: id,
      keyId: key.keyId,
      alias: 'priced',
      state: 'settled',
      usage: { inputTokens: '900', outputTokens: '300' },
      writtenOff: { tokens: '0', credits: '0' },
    });
    // 900 input and 100 output from the package, 200 output at 5 credits.
    expect(data.charged).toEqual({ tokens: '1000', credits: '1000' });
    expect(data.drawn).toEqual([
      { source: 'entitlement', entitlementId: expect.any(String), packageId: 'small', amount: '1000' },
      { source: 'credit', entitlementId: null, packageId: null, amount: data.charged.credits },
    ]);
    expect(data.prices).toMatchObject({ input: '2', output: '5' });

    const stranger = await customer();
    const refused = await stranger.client.request('GET', `/me/activity/${id}`);
    expect([refused.status, refused.body.code]).toEqual([404, 'not_found']);
  });

  it("never shows another account's activity", async () => {
    const mine = await customer();
    const theirs = await customer();
    await grantPackage(context.deps, { accountId: theirs.key.accountId, packageId: 'small', cause: 'test' });
    await meteredCall(theirs.key, 'tokens-only', 1n, 1n);
    const activity = await mine.client.request('GET', `/me/activity?keyId=${theirs.key.keyId}`);
    expect(activity.body.data.items).toEqual([]);
  });
});

describe('catalogue', () => {
  it('lists only published models and packages, without upstream details', async () => {
    const client = createClient(context);
    const models = await client.request('GET', '/catalog/models');
    expect(models.status).toBe(200);
    expect(models.body.data.map((model: { alias: string }) => model.alias)).toEqual([
      'priced',
      'tokens-only',
    ]);
    expect(models.body.data[0]).toEqual({
      alias: 'priced',
      protocols: ['chat_completions', 'responses'],
      price: { input: '2', output: '5', cacheRead: '2', cacheWrite: '2', cacheWrite1h: '2', request: '0' },
      maxOutputTokens: 1000,
      defaultMaxOutputTokens: 100,
      packageRate: '1',
    });
    const packages = await client.request('GET', '/catalog/packages');
    expect(packages.body.data.map((pack: { id: string }) => pack.id)).toEqual(['exact', 'huge', 'small']);
    expect(packages.body.data[1]).toMatchObject({
      tokens: '18014398509481984',
      price: { amount: '999999', currency: 'EUR' },
    });
    const text = JSON.stringify([models.body, packages.body]);
    for (const hidden of [
      'secret-upstream-model',
      'up-openai',
      'up-anthropic',
      '127.0.0.1',
      'UPSTREAM_KEY',
      'secret-pack',
    ]) {
      expect(text).not.toContain(hidden);
    }
  });

  it('lets an admin re-point an alias; callers keep the alias, reserve answers the new target', async () => {
    const { client, key } = await customer();
    const forbidden = await client.request('PUT', '/admin/catalog/aliases/priced', { body: {} });
    expect(forbidden).toMatchObject({ status: 403, body: { code: 'forbidden' } });
    await setAccountRoles(context.deps.db, key.accountId, { admin: true });
    const body = {
      providerId: 'up-openai',
      upstreamModel: 'secret-upstream-model-z',
      protocols: ['chat_completions', 'responses'],
      published: true,
      price: { input: '2', output: '5' },
      defaultMaxOutputTokens: 100,
      maxOutputTokens: 1000,
    };
    const invalid = await client.request('PUT', '/admin/catalog/aliases/priced', {
      body: { ...body, protocols: [] },
    });
    expect(invalid).toMatchObject({ status: 422, body: { code: 'validation_failed' } });
    const changed = await client.request('PUT', '/admin/catalog/aliases/priced', { body });
    expect(changed.status).toBe(200);
    expect(context.events.events).toContainEqual({ type: 'catalog.changed' });
    await changeCredit(context.deps, {
      accountId: key.accountId,
      amount: 100n,
      kind: 'grant',
      cause: 'test',
    });
    const reserved = await api.reserve([reserveItem(key, 'priced', 1n, 1n)]);
    expect(reserved.body.results[0]).toMatchObject({ ok: true, upstreamModel: 'secret-upstream-model-z' });
    const full = await client.request('GET', '/admin/catalog');
    expect(full.body.data.aliases.find((alias: { alias: string }) => alias.alias === 'priced')).toMatchObject(
      {
        upstreamModel: 'secret-upstream-model-z',
        providerId: 'up-openai',
      },
    );
  });
});

describe('held reservations (admin)', () => {
  it('lists holds and resolves one by settling the usage learned later', async () => {
    const { client, key } = await customer();
    await changeCredit(context.deps, {
      accountId: key.accountId,
      amount: 1000n,
      kind: 'grant',
      cause: 'test',
    });
    const item = reserveItem(key, 'priced', 10n, 20n);
    await api.reserve([item]);
    await api.finish([endItem(key, item.reservationId, 'priced', 'hold', 'billing_settlement_pending')]);

    expect((await client.request('GET', '/admin/reservations/held')).status).toBe(403);
    await setAccountRoles(context.deps.db, key.accountId, { admin: true });
    const held = await client.request('GET', '/admin/reservations/held');
    expect(held.status).toBe(200);
    expect(held.body.data).toContainEqual(
      expect.objectContaining({
        id: item.reservationId,
        reason: 'billing_settlement_pending',
        reserved: { tokens: '0', credits: '120' },
      }),
    );

    // Money moves only with a reason, kept in the audit row.
    const unexplained = await client.request('POST', `/admin/reservations/${item.reservationId}/resolve`, {
      body: { action: 'settle', inputTokens: '5', outputTokens: '4' },
    });
    expect(unexplained).toMatchObject({ status: 422, body: { errors: { note: [expect.any(String)] } } });
    const resolved = await client.request('POST', `/admin/reservations/${item.reservationId}/resolve`, {
      body: { action: 'settle', inputTokens: '5', outputTokens: '4', note: 'usage from the provider report' },
    });
    expect(resolved.body.data).toEqual({ status: 'settled', charged: { tokens: '0', credits: '30' } });
    expect((await client.request('GET', '/me/balance')).body.data.remaining.credits).toBe('970');
    const again = await client.request('POST', `/admin/reservations/${item.reservationId}/resolve`, {
      body: { action: 'release', note: 'again' },
    });
    expect(again).toMatchObject({ status: 404, body: { code: 'not_found' } });
    // Audited once, in the resolution's own transaction, with what the admin gave.
    const audit = await client.request('GET', `/admin/audit?targetId=${item.reservationId}`);
    expect(audit.body.data.items).toMatchObject([
      {
        action: 'admin.reservation.resolve',
        actor: { accountId: key.accountId },
        target: { type: 'reservation', id: item.reservationId },
        detail: {
          action: 'settle',
          inputTokens: '5',
          outputTokens: '4',
          note: 'usage from the provider report',
          accountId: key.accountId,
          reserved: { tokens: '0', credits: '120' },
        },
      },
    ]);
  });
});

describe('write-offs report (admin)', () => {
  it('sums what usage beyond the balance wrote off, by account and alias, largest first', async () => {
    const { client, key } = await customer();
    await changeCredit(context.deps, {
      accountId: key.accountId,
      amount: 100n,
      kind: 'grant',
      cause: 'test',
    });
    const item = reserveItem(key, 'priced', 10n, 10n);
    await api.reserve([item]);
    // The provider reported far more than was reserved: 100 in, 100 out at 2 and 5 = 700 credits.
    const settled = await api.finish([settleItem(key, item.reservationId, 'priced', 100n, 100n)]);
    expect(settled.body.results[0]).toMatchObject({
      charged: { credits: '100' },
      writtenOff: { credits: '600' },
    });

    expect((await client.request('GET', '/admin/reports/write-offs')).status).toBe(403);
    await setAccountRoles(context.deps.db, key.accountId, { admin: true });
    const report = await client.request('GET', '/admin/reports/write-offs?limit=1000');
    expect(report.status).toBe(200);
    expect(report.body.data.items).toContainEqual({
      accountId: key.accountId,
      alias: 'priced',
      reservations: '1',
      writtenOff: { tokens: '0', credits: '600' },
    });
    const credits = report.body.data.items.map((row: { writtenOff: { credits: string } }) =>
      BigInt(row.writtenOff.credits),
    );
    expect([...credits].sort((a, b) => (a < b ? 1 : a > b ? -1 : 0))).toEqual(credits);

    const past = await client.request('GET', '/admin/reports/write-offs?from=2020-01-01&to=2020-02-01');
    expect(past.body.data.items).toEqual([]);
    const invalid = await client.request('GET', '/admin/reports/write-offs?from=yesterday');
    expect(invalid).toMatchObject({ status: 422, body: { code: 'validation_failed' } });
    const reversed = await client.request('GET', '/admin/reports/write-offs?from=2021-01-01&to=2020-01-01');
    expect(reversed).toMatchObject({ status: 422, body: { code: 'validation_failed' } });
  });
});

describe('internal billing API', () => {
  it('refuses requests without a valid service token', async () => {
    const none = await context.internalApp.request('/internal/v1/catalog');
    expect(none.status).toBe(401);
    const wrongSecret = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('tollgate-gateway')
      .setAudience('tollgate-control-plane-internal')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode('x'.repeat(40)));
    const forged = await context.internalApp.request('/internal/v1/catalog', {
      headers: { authorization: `Bearer ${wrongSecret}` },
    });
    expect(forged.status).toBe(401);
  });

  it('serves the catalogue, key resolution with plans, and read-only key status', async () => {
    const catalog = await api.call<unknown>('/catalog');
    expect(GatewayCatalog.parse(catalog.body).aliases.map((alias) => alias.alias)).toContain('hidden');

    const { key } = await customer();
    await grantPackage(context.deps, { accountId: key.accountId, packageId: 'exact', cause: 'test' });
    const resolved = await api.call<unknown>('/keys/resolve', { keyDigest: key.digest });
    expect(resolved.status).toBe(200);
    expect(ResolvedKey.parse(resolved.body)).toMatchObject({
      keyId: key.keyId,
      state: 'active',
      plans: [
        {
          packageId: 'exact',
          aliases: ['tokens-only'],
          maxOutputTokens: 500,
          requestsPerMinute: 60,
          concurrency: 3,
        },
      ],
    });
    const unknown = await api.call<{ code: string }>('/keys/resolve', { keyDigest: '0'.repeat(64) });
    expect(unknown).toMatchObject({ status: 401, body: { code: 'invalid_api_key' } });

    await api.reserve([reserveItem(key, 'tokens-only', 100n, 200n)]);
    const status = await api.call<unknown>('/keys/status', { keyDigest: key.digest });
    expect(KeyStatus.parse(status.body)).toMatchObject({
      remaining: { tokens: '7000', credits: '0' },
      reserved: { tokens: '300', credits: '0' },
    });
    const again = await api.call<unknown>('/keys/status', { keyDigest: key.digest });
    expect(again.body).toEqual(status.body);
  });

  it('answers malformed batches with validation_failed and changes nothing', async () => {
    const bad = await api.call<{ code: string; errors: Record<string, string[]> }>('/reservations', {
      items: [{ reservationId: 'not-a-uuid', keyDigest: 'x', alias: 'a', surface: 'messages', estimate: {} }],
    });
    expect(bad.status).toBe(422);
    expect(bad.body.code).toBe('validation_failed');
    expect(Object.keys(bad.body.errors).length).toBeGreaterThan(0);
    const floats = await api.call<{ code: string }>('/reservations/finish', {
      items: [
        {
          ...settleItem(
            { accountId: crypto.randomUUID(), email: '', keyId: crypto.randomUUID(), secret: '', digest: '' },
            crypto.randomUUID(),
            'priced',
            1n,
            1n,
          ),
          usage: { inputTokens: '1.5', outputTokens: '1e3' },
        },
      ],
    });
    expect(floats.status).toBe(422);
  });
});
