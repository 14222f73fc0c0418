import { generateApiKeySecret } from '@tollgate/schemas';
import { describe, expect, it } from 'vitest';
import { useStack } from './support.ts';

// Behind a trusted proxy (TRUST_PROXY): the client address is the last X-Forwarded-For entry, so
// the test can speak from several addresses. Three unknown keys per address and minute.
const PER_ADDRESS = 3;
const t = useStack('gw-unknown-keys', {
  gatewayEnv: { TRUST_PROXY: 'true', UNKNOWN_KEYS_PER_ADDRESS_PER_MINUTE: String(PER_ADDRESS) },
});

const from = (address: string) => ({ headers: { 'x-forwarded-for': `198.18.0.1, ${address}` } });

describe('unrecognised keys', () => {
  it('stop reaching the control plane from an address that sent too many; other addresses and cached keys go on', async () => {
    const known = await t.key({ credits: 1_000_000n });
    // Cached from the flooding address before the flood.
    expect((await t.get('/v1/models', known.secret, from('203.0.113.7'))).status).toBe(200);
    for (let index = 0; index < PER_ADDRESS; index += 1) {
      t.expectError(
        await t.get('/v1/models', generateApiKeySecret(), from('203.0.113.7')),
        401,
        'invalid_api_key',
      );
    }
    const limited = await t.get('/v1/models', generateApiKeySecret(), from('203.0.113.7'));
    t.expectError(limited, 429, 'rate_limit_exceeded');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // The same on the metered routes.
    t.expectError(
      await t.post(
        '/v1/chat/completions',
        generateApiKeySecret(),
        { model: 'gpt-test', messages: [] },
        from('203.0.113.7'),
      ),
      429,
      'rate_limit_exceeded',
    );
    // Another address is not held back by it; the flooding address's known key still works.
    t.expectError(
      await t.get('/v1/models', generateApiKeySecret(), from('198.51.100.9')),
      401,
      'invalid_api_key',
    );
    expect(
      (
        await t.post(
          '/v1/chat/completions',
          known.secret,
          { model: 'gpt-test', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
          from('203.0.113.7'),
        )
      ).status,
    ).toBe(200);
  });

  it('are answered from memory when sent again: repeats are no new lookups', async () => {
    const unknown = generateApiKeySecret();
    // Far more repeats than the address may look up: each is invalid_api_key, never 429.
    for (let index = 0; index < PER_ADDRESS * 3; index += 1) {
      t.expectError(await t.get('/v1/key/status', unknown, from('192.0.2.44')), 401, 'invalid_api_key');
    }
  });

  it('counts an IPv6 client by its /64', async () => {
    for (let index = 0; index < PER_ADDRESS; index += 1) {
      t.expectError(
        await t.get('/v1/models', generateApiKeySecret(), from(`2001:db8:7:8::${index + 1}`)),
        401,
        'invalid_api_key',
      );
    }
    t.expectError(
      await t.get('/v1/models', generateApiKeySecret(), from('2001:db8:7:8:ffff::99')),
      429,
      'rate_limit_exceeded',
    );
  });
});
