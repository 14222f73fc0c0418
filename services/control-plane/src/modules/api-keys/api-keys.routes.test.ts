import { apiKeyDigest, isWellFormedApiKey, KeyStatus } from '@tollgate/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createClient,
  expectNowhere,
  receivedBodies,
  type TestClient,
  uniqueEmail,
} from '../../../test/client.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { balancesOf, changeCredit } from '../../../test/kit.ts';
import { syncCatalog } from '../catalog/catalog.service.ts';
import { parseCatalog } from '../catalog/catalog-file.ts';
import { findKeyByDigest } from './api-keys.service.ts';

// A key's scope may name only aliases the catalogue publishes.
const CATALOG = `
providers:
  - { id: up, kind: openai, base_url: "http://127.0.0.1:9/v1" }
aliases:
  - { alias: claude-fast, provider: up, upstream_model: m1, protocols: [chat_completions], default_max_output_tokens: 10, max_output_tokens: 10 }
  - { alias: gpt-mini, provider: up, upstream_model: m2, protocols: [chat_completions], default_max_output_tokens: 10, max_output_tokens: 10 }
`;

let context: TestContext;
const secrets: string[] = [];
const passwords: string[] = [];

beforeAll(async () => {
  context = await createTestContext('api-keys', { TRUST_PROXY: 'true', KEY_REVEAL_LIMIT: '4' });
  await syncCatalog(context.deps, parseCatalog(CATALOG, 'test', {}));
});
afterAll(async () => {
  await context.publicApp.mailer.drain();
  // No key secret in any log line, and none in any answer but the ones meant to carry it.
  const secretBearing = /"secret":"sk-/;
  // Each secret is looked for whole and without its `sk-tg-` prefix, which the log scrubber keys on.
  const needles = [...secrets, ...secrets.map((secret) => secret.slice('sk-tg-'.length)), ...passwords];
  expectNowhere(
    context,
    needles,
    receivedBodies.filter((body) => !secretBearing.test(body)),
  );
  await context.close();
});

async function signedIn(label: string): Promise<TestClient & { email: string; password: string }> {
  const client = createClient(context);
  const email = uniqueEmail(label);
  const password = `pw-${Math.random().toString(36).slice(2)}-long enough`;
  passwords.push(password);
  await client.signUp(email, password);
  const response = await client.logIn(email, password);
  if (response.status !== 200) throw new Error('login failed');
  return Object.assign(client, { email, password });
}

function resolve(secret: string) {
  return findKeyByDigest(
    context.deps.db,
    context.deps.config.keyPepper,
    apiKeyDigest(secret),
    context.clock.now(),
  );
}

function keyChanges(keyId: string): number {
  return context.events.events.filter((event) => event.type === 'key.changed' && event.keyId === keyId)
    .length;
}

describe('the key lifecycle', () => {
  it('create -> list masked -> reveal -> rotate -> disable -> enable -> revoke', async () => {
    const client = await signedIn('story');

    const created = await client.request('POST', '/me/api-keys', {
      body: { name: 'prod', scope: ['claude-fast', 'gpt-mini'], limits: { concurrency: 2 } },
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('cache-control')).toBe('no-store');
    const { key, secret } = created.body.data;
    secrets.push(secret);
    expect(isWellFormedApiKey(secret)).toBe(true);
    expect(key).toMatchObject({
      name: 'prod',
      state: 'active',
      scope: ['claude-fast', 'gpt-mini'],
      revealable: true,
    });
    expect(key.limits).toEqual({ ...context.deps.config.keyDefaults, concurrency: 2 });
    expect(keyChanges(key.id)).toBe(1);

    const record = await resolve(secret);
    expect(record).toMatchObject({
      keyId: key.id,
      state: 'active',
      accountSuspended: false,
      scope: ['claude-fast', 'gpt-mini'],
    });
    expect(record?.limits.concurrency).toBe(2);

    const list = await client.request('GET', '/me/api-keys');
    expect(list.status).toBe(200);
    expect(list.body.data).toHaveLength(1);
    expect(list.body.data[0].mask).toMatch(/^sk-tg-.{4}….{4}$/);
    expect(JSON.stringify(list.body)).not.toContain(secret);
    expect(JSON.stringify(list.body)).not.toContain(secret.slice(6, 30));

    const revealed = await client.request('POST', `/me/api-keys/${key.id}/reveal`);
    expect(revealed.status).toBe(200);
    expect(revealed.headers.get('cache-control')).toBe('no-store');
    expect(revealed.body.data.secret).toBe(secret);

    const rotated = await client.request('POST', `/me/api-keys/${key.id}/rotate`);
    expect(rotated.status).toBe(200);
    const newSecret = rotated.body.data.secret;
    secrets.push(newSecret);
    expect(newSecret).not.toBe(secret);
    expect(rotated.body.data.key.id).toBe(key.id);
    expect(await resolve(secret)).toBeNull();
    expect((await resolve(newSecret))?.keyId).toBe(key.id);
    const revealedAgain = await client.request('POST', `/me/api-keys/${key.id}/reveal`);
    expect(revealedAgain.body.data.secret).toBe(newSecret);

    const disabled = await client.request('PATCH', `/me/api-keys/${key.id}/status`, {
      body: { status: 'disabled' },
    });
    expect(disabled.status).toBe(200);
    expect(disabled.body.data.state).toBe('disabled');
    expect((await resolve(newSecret))?.state).toBe('disabled');

    const enabled = await client.request('PATCH', `/me/api-keys/${key.id}/status`, {
      body: { status: 'active' },
    });
    expect(enabled.body.data.state).toBe('active');
    expect((await resolve(newSecret))?.state).toBe('active');

    const revoked = await client.request('PATCH', `/me/api-keys/${key.id}/status`, {
      body: { status: 'revoked' },
    });
    expect(revoked.body.data.state).toBe('revoked');
    expect(revoked.body.data.revealable).toBe(false);
    expect((await resolve(newSecret))?.state).toBe('revoked');

    for (const status of ['active', 'disabled']) {
      const refused = await client.request('PATCH', `/me/api-keys/${key.id}/status`, { body: { status } });
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe('forbidden');
      expect(refused.body.message).toMatch(/revoked/i);
    }
    const rotateRevoked = await client.request('POST', `/me/api-keys/${key.id}/rotate`);
    expect(rotateRevoked.status).toBe(403);
    const revealRevoked = await client.request('POST', `/me/api-keys/${key.id}/reveal`);
    expect(revealRevoked.status).toBe(403);
    expect((await resolve(newSecret))?.state).toBe('revoked');
    // create, rotate, disable, enable, revoke
    expect(keyChanges(key.id)).toBe(5);

    const stored = await context.deps.db
      .selectFrom('api_keys')
      .select(['secret_ciphertext', 'lookup_hash'])
      .where('id', '=', key.id)
      .executeTakeFirstOrThrow();
    expect(stored.secret_ciphertext).toBeNull();
    expect(stored.lookup_hash.toString('hex')).not.toBe(apiKeyDigest(newSecret));
  });

  it('validates a key with its balance, spending nothing', async () => {
    const client = await signedIn('status');
    const accountId = (await client.request('GET', '/me')).body.data.id;
    await changeCredit(context.deps, { accountId, amount: 750n, kind: 'grant', cause: 'test funding' });
    const created = await client.request('POST', '/me/api-keys', { body: { name: 'check' } });
    secrets.push(created.body.data.secret);
    const id = created.body.data.key.id;
    const before = await balancesOf(context.deps, accountId);
    expect(before).toMatchObject({ credits: 750n, reservedCredits: 0n });
    const first = await client.request('GET', `/me/api-keys/${id}/status`);
    expect(first.status).toBe(200);
    const status = KeyStatus.parse(first.body.data);
    expect(status).toMatchObject({
      keyId: id,
      state: 'active',
      scope: null,
      remaining: { tokens: '0', credits: '750' },
    });
    const second = await client.request('GET', `/me/api-keys/${id}/status`);
    expect(second.body.data).toEqual(first.body.data);
    // Validating reserved, charged and recorded nothing.
    expect(await balancesOf(context.deps, accountId)).toEqual(before);
    const balance = await client.request('GET', '/me/balance');
    expect(balance.body.data.remaining.credits).toBe('750');
    const ledger = await context.deps.db
      .selectFrom('ledger_entries')
      .select((eb) => eb.fn.countAll<string>().as('count'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    expect(Number(ledger.count)).toBe(1);
  });

  it('derives expired from the expiry date', async () => {
    const client = await signedIn('expiry');
    const expiresAt = new Date(context.clock.now().getTime() + 60_000).toISOString();
    const created = await client.request('POST', '/me/api-keys', { body: { name: 'short', expiresAt } });
    secrets.push(created.body.data.secret);
    expect(created.body.data.key.state).toBe('active');
    context.clock.advance(61_000);
    const list = await client.request('GET', '/me/api-keys');
    expect(list.body.data[0].state).toBe('expired');
    expect((await resolve(created.body.data.secret))?.state).toBe('expired');
    const past = await client.request('POST', '/me/api-keys', {
      body: { name: 'past', expiresAt: new Date(context.clock.now().getTime() - 1000).toISOString() },
    });
    expect(past.status).toBe(422);
    expect(past.body.errors.expiresAt).toHaveLength(1);
  });

  it('answers per-field validation errors on create', async () => {
    const client = await signedIn('invalid');
    const response = await client.request('POST', '/me/api-keys', {
      body: { name: '', scope: [], limits: { maxOutputTokens: -1, concurrency: 1.5 } },
    });
    expect(response.status).toBe(422);
    expect(Object.keys(response.body.errors).sort()).toEqual([
      'limits.concurrency',
      'limits.maxOutputTokens',
      'name',
      'scope',
    ]);
  });
});

describe('ownership', () => {
  it("answers not_found for another account's key on every key route, as for a missing one", async () => {
    const owner = await signedIn('owner');
    const stranger = await signedIn('stranger');
    const created = await owner.request('POST', '/me/api-keys', { body: { name: 'mine' } });
    secrets.push(created.body.data.secret);
    const id = created.body.data.key.id;
    const missing = '00000000-0000-4000-8000-000000000000';
    for (const target of [id, missing, 'not-a-uuid']) {
      const attempts = [
        await stranger.request('GET', `/me/api-keys/${target}/status`),
        await stranger.request('PATCH', `/me/api-keys/${target}/status`, { body: { status: 'revoked' } }),
        await stranger.request('POST', `/me/api-keys/${target}/rotate`),
        await stranger.request('POST', `/me/api-keys/${target}/reveal`),
      ];
      for (const attempt of attempts) {
        expect(attempt.status).toBe(404);
        expect(attempt.body).toEqual({ message: 'Not found.', code: 'not_found' });
      }
    }
    expect((await stranger.request('GET', '/me/api-keys')).body.data).toEqual([]);
    expect((await resolve(created.body.data.secret))?.state).toBe('active');
  });
});

/** The audit rows of a key's reveals, oldest first. */
function revealsOf(keyId: string) {
  return context.deps.db
    .selectFrom('audit_log')
    .select(['ip', 'detail'])
    .where('action', '=', 'api_key.reveal')
    .where('target_id', '=', keyId)
    .orderBy('id')
    .execute() as Promise<Array<{ ip: string | null; detail: { outcome?: string; sessionId?: string } }>>;
}

describe('copy key (reveal)', () => {
  it('is throttled, and every attempt is audited with who, which key and from where', async () => {
    const client = await signedIn('reveal');
    const created = await client.request('POST', '/me/api-keys', { body: { name: 'copy' } });
    secrets.push(created.body.data.secret);
    const id = created.body.data.key.id;
    const limit = context.deps.config.throttles.keyReveal.limit;
    for (let attempt = 0; attempt < limit; attempt += 1) {
      expect((await client.request('POST', `/me/api-keys/${id}/reveal`)).status).toBe(200);
    }
    const throttled = await client.request('POST', `/me/api-keys/${id}/reveal`);
    expect(throttled.status).toBe(429);
    expect(throttled.body.code).toBe('rate_limit_exceeded');
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(throttled.headers.get('cache-control')).toBe('no-store');

    const audit = await revealsOf(id);
    expect(audit.map((row) => row.detail.outcome)).toEqual([...Array(limit).fill('revealed'), 'throttled']);
    expect(audit.every((row) => row.ip === client.ip && typeof row.detail.sessionId === 'string')).toBe(true);

    // The window passes (longer than a session's idle limit, so sign in again): reveal works again.
    context.clock.advance(context.deps.config.throttles.keyReveal.windowMs + 1000);
    expect((await client.logIn(client.email, client.password)).status).toBe(200);
    const again = await client.request('POST', `/me/api-keys/${id}/reveal`);
    expect(again.status).toBe(200);
    expect(again.body.data.secret).toBe(created.body.data.secret);
  });

  it('refuses keys created before re-copy support until they are rotated', async () => {
    const client = await signedIn('legacy');
    const created = await client.request('POST', '/me/api-keys', { body: { name: 'old' } });
    secrets.push(created.body.data.secret);
    const id = created.body.data.key.id;
    await context.deps.db
      .updateTable('api_keys')
      .set({ secret_ciphertext: null, recoverable: false })
      .where('id', '=', id)
      .execute();
    expect((await client.request('GET', '/me/api-keys')).body.data[0].revealable).toBe(false);
    const refused = await client.request('POST', `/me/api-keys/${id}/reveal`);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toMatch(/rotate/i);
    const rotated = await client.request('POST', `/me/api-keys/${id}/rotate`);
    secrets.push(rotated.body.data.secret);
    expect(rotated.body.data.key.revealable).toBe(true);
    const revealed = await client.request('POST', `/me/api-keys/${id}/reveal`);
    expect(revealed.body.data.secret).toBe(rotated.body.data.secret);
    const outcomes = await revealsOf(id);
    expect(outcomes.map((row) => row.detail.outcome)).toEqual(['not_revealable', 'revealed']);
  });

  it('cannot be decrypted from the database alone: the ciphertext is bound to its key', async () => {
    const client = await signedIn('bound');
    const first = await client.request('POST', '/me/api-keys', { body: { name: 'a' } });
    const second = await client.request('POST', '/me/api-keys', { body: { name: 'b' } });
    secrets.push(first.body.data.secret, second.body.data.secret);
    const stolen = await context.deps.db
      .selectFrom('api_keys')
      .select('secret_ciphertext')
      .where('id', '=', first.body.data.key.id)
      .executeTakeFirstOrThrow();
    expect(stolen.secret_ciphertext?.toString('latin1')).not.toContain(first.body.data.secret);
    await context.deps.db
      .updateTable('api_keys')
      .set({ secret_ciphertext: stolen.secret_ciphertext })
      .where('id', '=', second.body.data.key.id)
      .execute();
    const swapped = await client.request('POST', `/me/api-keys/${second.body.data.key.id}/reveal`);
    expect(swapped.status).toBe(500);
    expect(JSON.stringify(swapped.body)).not.toContain('sk-');
    const [audit] = await revealsOf(second.body.data.key.id);
    expect(audit?.detail.outcome).toBe('failed');
  });
});
