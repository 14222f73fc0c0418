import { generateManagementKeySecret } from '@tollgate/schemas';
import { describe, expect, it } from 'vitest';
import { bodyFor, useStack } from './support.ts';

const t = useStack('gw-management-keys');

describe('reseller management keys', () => {
  it('are never accepted by the gateway: invalid_api_key in either header, on every endpoint, nothing upstream', async () => {
    const secret = generateManagementKeySecret();
    const calls = t.upstreamCalls();
    const variants: Record<string, string>[] = [
      { authorization: `Bearer ${secret}` },
      { 'x-api-key': secret },
    ];
    for (const headers of variants) {
      for (const path of [
        '/v1/messages',
        '/v1/messages/count_tokens',
        '/v1/chat/completions',
        '/v1/responses',
      ]) {
        const alias = path.startsWith('/v1/messages') ? 'claude-test' : 'gpt-test';
        const reply = await t.post(path, null, bodyFor(path, alias), { headers });
        t.expectError(reply, 401, 'invalid_api_key');
        expect(reply.text).not.toContain(secret);
      }
      t.expectError(await t.get('/v1/models', null, { headers }), 401, 'invalid_api_key');
      t.expectError(await t.get('/v1/key/status', null, { headers }), 401, 'invalid_api_key');
    }
    expect(t.upstreamCalls()).toBe(calls);
  });
});
