import { describe, expect, it } from 'vitest';
import { bodyFor, uniqueTag, useStack } from './support.ts';

// A provider whose credential names an ordinary environment variable of the gateway (a row written
// before names were checked, or straight into the database) must not make the gateway send that
// variable's value to the provider's base URL: only PROVIDER_SECRET_PREFIX names are ever read.
const t = useStack('gw-provider-namespace');

describe('provider credentials outside the namespace', () => {
  it('are never sent upstream: the call fails closed and nothing reaches the provider', async () => {
    const key = await t.key({ credits: 1_000_000n });
    const { deps } = t.stack.controlPlane;
    // REDIS_KEY_PREFIX is set in this gateway's environment (see startTestStack).
    await deps.db
      .updateTable('providers')
      .set({ credential_ref: 'REDIS_KEY_PREFIX' })
      .where('id', '=', 'mock-anthropic')
      .execute();
    await deps.events.publish({ type: 'catalog.changed' });

    let reply = await t.post(
      '/v1/messages',
      key.secret,
      bodyFor('/v1/messages', 'claude-test', `tag=${uniqueTag()}`),
    );
    for (let attempt = 0; attempt < 50 && reply.status === 200; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      reply = await t.post(
        '/v1/messages',
        key.secret,
        bodyFor('/v1/messages', 'claude-test', `tag=${uniqueTag()}`),
      );
    }
    t.expectError(reply, 503, 'upstream_unavailable');
    const leaked = t.stack.mock
      .requests()
      .filter((request) => JSON.stringify(request.headers).includes(t.stack.redisPrefix));
    expect(leaked).toEqual([]);
  });
});
