import { changeKeyStatus } from '@tollgate/control-plane/test-kit';
import { generateApiKeySecret } from '@tollgate/schemas';
import { describe, expect, it } from 'vitest';
import { PROVIDER_KEY } from './stack.ts';
import { bodyFor, uniqueTag, useStack } from './support.ts';

const t = useStack('gw-credentials');
const CREDITS = 1_000_000n;

/** Usage the mock reports for the calls of this file, and what it costs on claude-test (3/15). */
const USAGE = 'input_tokens=10,output_tokens=2';
const COST = 10n * 3n + 2n * 15n;

describe('credentials', () => {
  it('accepts the key in x-api-key, in Authorization: Bearer, and in both when they agree', async () => {
    const key = await t.key({ credits: CREDITS });
    const variants: Record<string, string>[] = [
      { 'x-api-key': key.secret },
      { authorization: `Bearer ${key.secret}` },
      { 'x-api-key': key.secret, authorization: `Bearer ${key.secret}` },
      { authorization: `bearer   ${key.secret}` },
    ];
    for (const headers of variants) {
      const tag = uniqueTag('cred');
      const reply = await t.post(
        '/v1/messages',
        null,
        bodyFor('/v1/messages', 'claude-test', `tag=${tag},${USAGE}`),
        {
          headers,
        },
      );
      expect(reply.status, reply.text).toBe(200);
      expect(t.tagged(tag)).toBe(1);
      // The upstream sees the provider's key, never the client's.
      const [recorded] = t.stack.mock.requests(tag);
      expect(recorded!.headers['x-api-key']).toBe(PROVIDER_KEY);
      expect(JSON.stringify(recorded!.headers)).not.toContain(key.secret);
    }
    await t.stack.settled();
    expect(await t.stack.balances(key.accountId)).toMatchObject({
      credits: CREDITS - 4n * COST,
      reservedCredits: 0n,
    });
  });

  it('refuses two different keys with conflicting_api_keys and charges neither account', async () => {
    const first = await t.key({ credits: CREDITS });
    const second = await t.key({ credits: CREDITS });
    const calls = t.upstreamCalls();
    const headers = { 'x-api-key': first.secret, authorization: `Bearer ${second.secret}` };
    for (const path of ['/v1/messages', '/v1/chat/completions', '/v1/responses']) {
      const alias = path === '/v1/messages' ? 'claude-test' : 'gpt-test';
      const reply = await t.post(path, null, bodyFor(path, alias), { headers });
      t.expectError(reply, 401, 'conflicting_api_keys');
    }
    t.expectError(await t.get('/v1/models', null, { headers }), 401, 'conflicting_api_keys');
    t.expectError(await t.get('/v1/key/status', null, { headers }), 401, 'conflicting_api_keys');
    expect(t.upstreamCalls()).toBe(calls);
    await t.expectUntouched(first, { credits: CREDITS });
    await t.expectUntouched(second, { credits: CREDITS });
  });

  it('takes the key from x-api-key when Authorization carries another scheme (e.g. a proxy)', async () => {
    const key = await t.key({ credits: CREDITS });
    const response = await t.post('/v1/chat/completions', null, bodyFor('/v1/chat/completions', 'gpt-test'), {
      headers: { 'x-api-key': key.secret, authorization: 'Basic dXNlcjpwYXNz' },
    });
    expect(response.status).toBe(200);
  });

  it('refuses missing, malformed, mistyped and unknown keys with invalid_api_key', async () => {
    const key = await t.key({ credits: CREDITS });
    const badChecksum = key.secret.slice(0, -1) + (key.secret.endsWith('A') ? 'B' : 'A');
    const unknown = generateApiKeySecret();
    const cases: Record<string, string>[] = [
      {},
      { authorization: '' },
      { 'x-api-key': '' },
      { authorization: 'Bearer' },
      { authorization: `Basic ${key.secret}` },
      { authorization: `Bearer ${key.secret} extra` },
      { 'x-api-key': 'sk-not-a-real-key' },
      { 'x-api-key': key.secret.slice(3) },
      { 'x-api-key': `${key.secret}x` },
      { 'x-api-key': badChecksum },
      { authorization: `Bearer ${unknown}` },
    ];
    const calls = t.upstreamCalls();
    for (const headers of cases) {
      const messages = await t.post('/v1/messages', null, bodyFor('/v1/messages', 'claude-test'), {
        headers,
      });
      t.expectError(messages, 401, 'invalid_api_key');
      const chat = await t.post('/v1/chat/completions', null, bodyFor('/v1/chat/completions', 'gpt-test'), {
        headers,
      });
      t.expectError(chat, 401, 'invalid_api_key');
      t.expectError(await t.get('/v1/models', null, { headers }), 401, 'invalid_api_key');
    }
    const count = await t.post(
      '/v1/messages/count_tokens',
      null,
      bodyFor('/v1/messages/count_tokens', 'claude-test'),
      {
        headers: { 'x-api-key': unknown },
      },
    );
    t.expectError(count, 401, 'invalid_api_key');
    expect(t.upstreamCalls()).toBe(calls);
    await t.expectUntouched(key, { credits: CREDITS });
  });

  it('refuses a key in the query string, even next to a valid header, and never logs it', async () => {
    const key = await t.key({ credits: CREDITS });
    const calls = t.upstreamCalls();
    const logsBefore = t.stack.gatewayLogs.length;
    for (const query of [
      `api_key=${key.secret}`,
      `key=${key.secret}`,
      `token=${key.secret}`,
      `foo=${key.secret}`,
    ]) {
      const reply = await t.post(`/v1/messages?${query}`, key.secret, bodyFor('/v1/messages', 'claude-test'));
      t.expectError(reply, 401, 'invalid_api_key');
      t.expectError(await t.get(`/v1/models?${query}`, key.secret), 401, 'invalid_api_key');
    }
    const refusal = await t.post(
      `/v1/chat/completions?key=${key.secret}`,
      null,
      bodyFor('/v1/chat/completions', 'gpt-test'),
    );
    t.expectError(refusal, 401, 'invalid_api_key');
    expect(t.upstreamCalls()).toBe(calls);
    // The refusals were logged (path only), the key was not.
    const lines = t.stack.gatewayLogs.slice(logsBefore).join('');
    expect(lines).toContain('"status":401');
    expect(lines).not.toContain(key.secret);
    await t.expectUntouched(key, { credits: CREDITS });
  });

  it('serves Claude Code: /v1/messages?beta=true with anthropic-beta headers, which reach the upstream unchanged', async () => {
    const key = await t.key({ credits: CREDITS });
    const tag = uniqueTag('beta');
    const beta =
      'interleaved-thinking-2025-05-14,context-management-2025-06-27,fine-grained-tool-streaming-2025-05-14';
    const reply = await t.post(
      '/v1/messages?beta=true',
      null,
      bodyFor('/v1/messages', 'claude-test', `tag=${tag},${USAGE}`),
      {
        headers: { 'x-api-key': key.secret, 'anthropic-version': '2023-06-01', 'anthropic-beta': beta },
      },
    );
    expect(reply.status, reply.text).toBe(200);
    const [recorded] = t.stack.mock.requests(tag);
    expect(recorded).toMatchObject({ anthropicVersion: '2023-06-01', anthropicBeta: beta });
    // The upstream call carries no query string of the client's.
    expect(recorded!.path).toBe('/v1/messages');
    await t.stack.settled();
    expect(await t.stack.balances(key.accountId)).toMatchObject({
      credits: CREDITS - COST,
      reservedCredits: 0n,
    });
  });
});

describe('key and account states', () => {
  it('refuses disabled, revoked and expired keys with their 403 codes, on every endpoint, without an upstream call', async () => {
    const deps = t.stack.controlPlane.deps;
    const disabled = await t.key({ credits: CREDITS });
    await changeKeyStatus(deps, disabled.accountId, disabled.keyId, 'disabled');
    const revoked = await t.key({ credits: CREDITS });
    await changeKeyStatus(deps, revoked.accountId, revoked.keyId, 'revoked');
    const expired = await t.key({ credits: CREDITS });
    await deps.db
      .updateTable('api_keys')
      .set({ expires_at: new Date(Date.now() - 60_000) })
      .where('id', '=', expired.keyId)
      .execute();
    await deps.events.publish({ type: 'key.changed', keyId: expired.keyId });

    const calls = t.upstreamCalls();
    const cases = [
      [disabled, 'api_key_disabled'],
      [revoked, 'api_key_revoked'],
      [expired, 'api_key_expired'],
    ] as const;
    for (const [key, code] of cases) {
      t.expectError(
        await t.post('/v1/messages', key.secret, bodyFor('/v1/messages', 'claude-test')),
        403,
        code,
      );
      t.expectError(
        await t.post(
          '/v1/messages/count_tokens',
          key.secret,
          bodyFor('/v1/messages/count_tokens', 'claude-test'),
        ),
        403,
        code,
      );
      t.expectError(
        await t.post('/v1/chat/completions', key.secret, bodyFor('/v1/chat/completions', 'gpt-test')),
        403,
        code,
      );
      t.expectError(
        await t.post('/v1/responses', key.secret, bodyFor('/v1/responses', 'gpt-test')),
        403,
        code,
      );
      t.expectError(await t.get('/v1/models', key.secret), 403, code);
      t.expectError(await t.get('/v1/key/status', key.secret), 403, code);
      await t.expectUntouched(key, { credits: CREDITS });
    }
    expect(t.upstreamCalls()).toBe(calls);
  });

  it('refuses every key of a suspended account with account_suspended', async () => {
    const key = await t.key({ credits: CREDITS });
    const deps = t.stack.controlPlane.deps;
    await deps.db
      .updateTable('accounts')
      .set({ status: 'suspended' })
      .where('id', '=', key.accountId)
      .execute();
    await deps.events.publish({ type: 'account.changed', accountId: key.accountId });
    const calls = t.upstreamCalls();
    t.expectError(
      await t.post('/v1/messages', key.secret, bodyFor('/v1/messages', 'claude-test')),
      403,
      'account_suspended',
    );
    t.expectError(
      await t.post('/v1/chat/completions', key.secret, bodyFor('/v1/chat/completions', 'gpt-test')),
      403,
      'account_suspended',
    );
    t.expectError(await t.get('/v1/models', key.secret), 403, 'account_suspended');
    t.expectError(await t.get('/v1/key/status', key.secret), 403, 'account_suspended');
    expect(t.upstreamCalls()).toBe(calls);
    await t.expectUntouched(key, { credits: CREDITS });
  });
});
