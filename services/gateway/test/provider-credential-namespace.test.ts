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
    // The event starts a reload on each gateway; waiting on it returns once the new copy is in.
    await t.stack.eventsDelivered();
    await Promise.all(t.stack.gateways.map((gateway) => gateway.deps.catalog.reload()));

    const reply = await t.post(
      '/v1/messages',
      key.secret,
      bodyFor('/v1/messages', 'claude-test', `tag=${uniqueTag()}`),
    );
    t.expectError(reply, 503, 'upstream_unavailable');
    const leaked = t.stack.mock
      .requests()
      .filter((request) => JSON.stringify(request.headers).includes(t.stack.redisPrefix));
    expect(leaked).toEqual([]);
  });
});
