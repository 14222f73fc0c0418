import { changeKeyStatus, createKey, rotateKey } from '@tollgate/control-plane/test-kit';
import { apiKeyDigest } from '@tollgate/schemas';
import { describe, expect, it } from 'vitest';
import { bodyFor, uniqueTag, useStack } from './support.ts';

// Two gateways: a change made through the control plane must reach every gateway's key cache.
const t = useStack('gw-key-changes', { gateways: 2 });
const CREDITS = 1_000_000n;
const GATEWAYS = [0, 1];

/** Warms both gateways' caches with the key: the next request is answered from memory. */
async function warm(secret: string): Promise<void> {
  for (const gateway of GATEWAYS) {
    const reply = await t.get('/v1/models', secret, { gateway });
    expect(reply.status, reply.text).toBe(200);
  }
}

const digestOf = apiKeyDigest;

/**
 * Once the change events have reached every gateway (each drops the key as it receives one), no
 * gateway's cache holds this digest any more.
 */
async function droppedEverywhere(digest: string): Promise<void> {
  await t.stack.eventsDelivered();
  for (const gateway of t.stack.gateways) expect(gateway.deps.keys.peek(digest)).toBeNull();
}

describe('the key cache follows change events', () => {
  it('drops a changed key from every gateway at once, before any request asks again', async () => {
    for (const change of ['disabled', 'revoked'] as const) {
      const key = await t.key({ credits: CREDITS });
      const digest = digestOf(key.secret);
      await warm(key.secret);
      for (const gateway of t.stack.gateways) expect(gateway.deps.keys.peek(digest)?.keyId).toBe(key.keyId);
      await changeKeyStatus(t.stack.controlPlane.deps, key.accountId, key.keyId, change);
      // Far sooner than the cache's own expiry (KEY_CACHE_TTL_SECONDS, 60 s here).
      await droppedEverywhere(digest);
    }
  });

  it('drops every key of an account whose account changed', async () => {
    const key = await t.key({ credits: CREDITS });
    const other = await createKey(t.stack.controlPlane.deps, key.accountId, { name: 'second', scope: null });
    t.remember(other.secret);
    // The second key's own setup events must land before it is cached, or they would drop it.
    await t.stack.eventsDelivered();
    await warm(key.secret);
    await warm(other.secret);
    // Both keys are cached on every gateway: the drop below is the event's doing.
    for (const gateway of t.stack.gateways) {
      expect(gateway.deps.keys.peek(digestOf(key.secret))?.keyId).toBe(key.keyId);
      expect(gateway.deps.keys.peek(digestOf(other.secret))?.keyId).toBe(other.key.id);
    }
    await t.stack.controlPlane.deps.events.publish({ type: 'account.changed', accountId: key.accountId });
    await droppedEverywhere(digestOf(key.secret));
    await droppedEverywhere(digestOf(other.secret));
  });
});

describe('key changes take effect on the very next request', () => {
  it('revocation: the next GET /v1/models, key status and metered call on every gateway are refused', async () => {
    const key = await t.key({ credits: CREDITS });
    await warm(key.secret);
    await changeKeyStatus(t.stack.controlPlane.deps, key.accountId, key.keyId, 'revoked');
    const calls = t.upstreamCalls();
    for (const gateway of GATEWAYS) {
      t.expectError(await t.get('/v1/models', key.secret, { gateway }), 403, 'api_key_revoked');
      t.expectError(await t.get('/v1/key/status', key.secret, { gateway }), 403, 'api_key_revoked');
      const reply = await t.post('/v1/messages', key.secret, bodyFor('/v1/messages', 'claude-test'), {
        gateway,
      });
      t.expectError(reply, 403, 'api_key_revoked');
    }
    expect(t.upstreamCalls()).toBe(calls);
    await t.expectUntouched(key, { credits: CREDITS });
  });

  it('disable and re-enable, ten times over: never a stale success, never a stale refusal', async () => {
    const key = await t.key({ credits: CREDITS, limits: { requestsPerMinute: 1000 } });
    const deps = t.stack.controlPlane.deps;
    const calls = t.upstreamCalls();
    for (let round = 0; round < 10; round += 1) {
      const gateway = round % 2;
      await warm(key.secret);
      await changeKeyStatus(deps, key.accountId, key.keyId, 'disabled');
      t.expectError(await t.get('/v1/models', key.secret, { gateway }), 403, 'api_key_disabled');
      const chat = await t.post(
        '/v1/chat/completions',
        key.secret,
        bodyFor('/v1/chat/completions', 'gpt-test'),
        {
          gateway: 1 - gateway,
        },
      );
      t.expectError(chat, 403, 'api_key_disabled');
      await changeKeyStatus(deps, key.accountId, key.keyId, 'active');
      expect((await t.get('/v1/models', key.secret, { gateway })).status).toBe(200);
      expect((await t.get('/v1/models', key.secret, { gateway: 1 - gateway })).status).toBe(200);
    }
    expect(t.upstreamCalls()).toBe(calls);
    await t.expectUntouched(key, { credits: CREDITS });
  });

  it('rotation: the previous secret is unknown at once on every gateway; the new one works', async () => {
    const key = await t.key({ credits: CREDITS });
    await warm(key.secret);
    const rotated = await rotateKey(t.stack.controlPlane.deps, key.accountId, key.keyId);
    t.remember(rotated.secret);
    const calls = t.upstreamCalls();
    for (const gateway of GATEWAYS) {
      t.expectError(await t.get('/v1/models', key.secret, { gateway }), 401, 'invalid_api_key');
      t.expectError(await t.get('/v1/key/status', key.secret, { gateway }), 401, 'invalid_api_key');
      const reply = await t.post('/v1/responses', key.secret, bodyFor('/v1/responses', 'gpt-test'), {
        gateway,
      });
      t.expectError(reply, 401, 'invalid_api_key');
    }
    expect(t.upstreamCalls()).toBe(calls);

    const tag = uniqueTag('rotated');
    const reply = await t.post(
      '/v1/responses',
      rotated.secret,
      bodyFor('/v1/responses', 'gpt-test', `tag=${tag},input_tokens=5,output_tokens=5`),
      { gateway: 1 },
    );
    expect(reply.status, reply.text).toBe(200);
    expect(t.tagged(tag)).toBe(1);
    await t.stack.settled();
    expect(await t.stack.balances(key.accountId)).toMatchObject({
      credits: CREDITS - (5n * 2n + 5n * 8n),
      reservedCredits: 0n,
    });
  });

  it('suspending the account refuses its cached keys on the next request', async () => {
    const key = await t.key({ credits: CREDITS });
    await warm(key.secret);
    const deps = t.stack.controlPlane.deps;
    await deps.db
      .updateTable('accounts')
      .set({ status: 'suspended' })
      .where('id', '=', key.accountId)
      .execute();
    await deps.events.publish({ type: 'account.changed', accountId: key.accountId });
    for (const gateway of GATEWAYS) {
      t.expectError(await t.get('/v1/models', key.secret, { gateway }), 403, 'account_suspended');
    }
    await deps.db.updateTable('accounts').set({ status: 'active' }).where('id', '=', key.accountId).execute();
    await deps.events.publish({ type: 'account.changed', accountId: key.accountId });
    for (const gateway of GATEWAYS)
      expect((await t.get('/v1/models', key.secret, { gateway })).status).toBe(200);
    await t.expectUntouched(key, { credits: CREDITS });
  });

  it('revoking one key leaves the account’s other keys working', async () => {
    const kept = await t.key({ credits: CREDITS });
    const other = await createKey(t.stack.controlPlane.deps, kept.accountId, { name: 'other', scope: null });
    t.remember(other.secret);
    await warm(kept.secret);
    await warm(other.secret);
    await changeKeyStatus(t.stack.controlPlane.deps, kept.accountId, other.key.id, 'revoked');
    t.expectError(await t.get('/v1/models', other.secret), 403, 'api_key_revoked');
    expect((await t.get('/v1/models', kept.secret)).status).toBe(200);
    const tag = uniqueTag('kept');
    const reply = await t.post(
      '/v1/messages',
      kept.secret,
      bodyFor('/v1/messages', 'claude-test', `tag=${tag}`),
    );
    expect(reply.status, reply.text).toBe(200);
    expect(t.tagged(tag)).toBe(1);
  });
});
