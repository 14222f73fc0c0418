/**
 * The vertex provider kind through the whole gateway: Claude through rawPredict (messages with
 * Vertex's anthropic_version, no model in the body) and Gemini through generateContent, on
 * Vertex's project and location URLs, each authorised with an OAuth token the gateway obtained
 * from the service account's token endpoint (the mock's) once and reused. Charged what was told.
 */
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { STACK_CATALOG } from './stack.ts';
import { bodyFor, uniqueTag, usageOf, useStack } from './support.ts';

const VERTEX_TOKEN = 'ya29.mock-vertex-access-token';
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const PRIVATE_PEM = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

function serviceAccount(tokenUri: string): string {
  return JSON.stringify({
    type: 'service_account',
    project_id: 'proj-1',
    private_key_id: 'k1',
    private_key: PRIVATE_PEM,
    client_email: 'tollgate@proj-1.iam.gserviceaccount.com',
    token_uri: tokenUri,
  });
}

// The service account's token endpoint is the mock's, whose URL is known once the stack starts:
// the catalogue callback runs before the gateway reads its environment, and fills these in.
const gatewayEnv: Record<string, string> = {};

const t = useStack('gw-vertex', {
  catalog: (mockUrl) => {
    gatewayEnv.TOLLGATE_PROVIDER_VERTEX_SA = serviceAccount(`${mockUrl}/token`);
    gatewayEnv.TOLLGATE_PROVIDER_VERTEX_BAD = serviceAccount(`${mockUrl}/no-token-here`);
    const base = `${mockUrl}/v1/projects/proj-1/locations/us-east5`;
    return STACK_CATALOG(mockUrl).replace(
      'aliases:\n',
      `  - { id: mock-vertex, kind: vertex, base_url: "${base}", credential: TOLLGATE_PROVIDER_VERTEX_SA }
  - { id: mock-vertex-bad, kind: vertex, base_url: "${base}", credential: TOLLGATE_PROVIDER_VERTEX_BAD }
aliases:
  - { alias: claude-vertex, provider: mock-vertex, upstream_model: claude-sonnet-4-5@20250929,
      protocols: [messages, count_tokens, chat_completions, responses],
      price: { input: 3, output: 15 }, default_max_output_tokens: 256, max_output_tokens: 4096 }
  - { alias: gemini-vertex, provider: mock-vertex, upstream_model: gemini-2.5-flash,
      protocols: [messages, count_tokens, chat_completions, responses],
      price: { input: 1, output: 4 }, default_max_output_tokens: 256, max_output_tokens: 4096 }
  - { alias: claude-vertex-bad, provider: mock-vertex-bad, upstream_model: claude-sonnet-4-5@20250929,
      protocols: [messages], price: { input: 3, output: 15 }, default_max_output_tokens: 256, max_output_tokens: 4096 }
`,
    );
  },
  gatewayEnv,
});
const CREDITS = 10_000_000n;

const CASES = [
  ['/v1/messages', 'claude-vertex', 'anthropic/models/claude-sonnet-4-5%4020250929:rawPredict', 3n, 15n],
  [
    '/v1/chat/completions',
    'claude-vertex',
    'anthropic/models/claude-sonnet-4-5%4020250929:rawPredict',
    3n,
    15n,
  ],
  ['/v1/messages', 'gemini-vertex', 'google/models/gemini-2.5-flash:generateContent', 1n, 4n],
  ['/v1/responses', 'gemini-vertex', 'google/models/gemini-2.5-flash:generateContent', 1n, 4n],
] as const;

describe('a Vertex alias', () => {
  it.each(CASES)(
    '%s on %s reaches %s with a bearer token, charged what was told',
    async (path, alias, where, inPrice, outPrice) => {
      const key = await t.key({ credits: CREDITS });
      const tag = uniqueTag('vx');
      const reply = await t.post(
        path,
        key.secret,
        bodyFor(path, alias, `tag=${tag},words=3,input_tokens=50`),
      );
      expect(reply.status, reply.text).toBe(200);
      const [recorded] = t.stack.mock.requests(tag);
      expect(recorded?.path).toBe(`/v1/projects/proj-1/locations/us-east5/publishers/${where}`);
      expect(recorded?.headers.authorization).toBe(`Bearer ${VERTEX_TOKEN}`);
      const body = JSON.parse(recorded!.body) as Record<string, unknown>;
      expect(body).not.toHaveProperty('model');
      if (alias === 'claude-vertex') expect(body.anthropic_version).toBe('vertex-2023-10-16');
      expect(reply.text).not.toContain('claude-sonnet-4-5@');
      const usage = usageOf(path, reply, false);
      expect(usage.output).toBe(3);
      await t.stack.settled();
      expect(await t.stack.balances(key.accountId)).toMatchObject({
        credits: CREDITS - (BigInt(usage.input) * inPrice + BigInt(usage.output) * outPrice),
        reservedCredits: 0n,
      });
    },
  );

  it('streams Claude through streamRawPredict and Gemini through streamGenerateContent', async () => {
    for (const [alias, where] of [
      ['claude-vertex', 'anthropic/models/claude-sonnet-4-5%4020250929:streamRawPredict'],
      ['gemini-vertex', 'google/models/gemini-2.5-flash:streamGenerateContent'],
    ] as const) {
      const key = await t.key({ credits: CREDITS });
      const tag = uniqueTag('vs');
      const reply = await t.post(
        '/v1/messages',
        key.secret,
        bodyFor('/v1/messages', alias, `tag=${tag},words=2`, { stream: true }),
      );
      expect(reply.status, reply.text).toBe(200);
      expect(reply.text).toContain('event: message_stop');
      expect(t.stack.mock.requests(tag)[0]?.path).toBe(
        `/v1/projects/proj-1/locations/us-east5/publishers/${where}`,
      );
      await t.stack.settled();
      expect(await t.stack.balances(key.accountId)).toMatchObject({ reservedCredits: 0n });
    }
  });

  it('obtained its token once for all these calls', () => {
    expect(t.stack.mock.requests().filter((request) => request.path === '/token')).toHaveLength(1);
  });

  it('answers upstream_unavailable when the token endpoint refuses, logs why, charges nothing', async () => {
    const key = await t.key({ credits: CREDITS });
    const reply = await t.post('/v1/messages', key.secret, bodyFor('/v1/messages', 'claude-vertex-bad'));
    t.expectError(reply, 503, 'upstream_unavailable');
    await t.stack.settled();
    expect(await t.stack.balances(key.accountId)).toMatchObject({ credits: CREDITS, reservedCredits: 0n });
    const reservations = await t.stack.reservations(key.accountId);
    expect(reservations.map((row) => [row.status, row.charged_credits])).toEqual([['released', 0n]]);
    const line = await t.waitForLog((text) => text.includes('provider authorisation failed'));
    expect(JSON.parse(line)).toMatchObject({
      providerId: 'mock-vertex-bad',
      cause: 'the token endpoint answered 404',
    });
    expect(line).not.toContain('PRIVATE KEY');
  });

  it('a token Vertex refuses (401, as when it expired) and a throttle are upstream_unavailable, free, the cause logged', async () => {
    for (const [alias, status, reason] of [
      ['claude-vertex', 401, 'credential_refused'],
      ['gemini-vertex', 401, 'credential_refused'],
      ['claude-vertex', 429, 'rate_limited'],
      ['gemini-vertex', 429, 'rate_limited'],
    ] as const) {
      const key = await t.key({ credits: CREDITS });
      const reply = await t.post(
        '/v1/chat/completions',
        key.secret,
        bodyFor('/v1/chat/completions', alias, `status=${status}`),
      );
      t.expectError(reply, 503, 'upstream_unavailable');
      expect(reply.text).not.toMatch(/google|vertex|anthropic|UNAUTHENTICATED|RESOURCE_EXHAUSTED/i);
      await t.stack.settled();
      const reservations = await t.stack.reservations(key.accountId);
      expect(reservations.map((row) => [row.status, row.charged_credits])).toEqual([['released', 0n]]);
      const line = await t.waitForLog(
        (text) => text.includes('upstream call failed') && text.includes(key.keyId),
      );
      expect(JSON.parse(line)).toMatchObject({ providerId: 'mock-vertex', reason, upstreamStatus: status });
    }
  });

  it('a failure inside a Vertex stream ends the caller stream with our error event, held, nothing charged', async () => {
    for (const alias of ['claude-vertex', 'gemini-vertex']) {
      const key = await t.key({ credits: CREDITS });
      const reply = await t.post(
        '/v1/messages',
        key.secret,
        bodyFor('/v1/messages', alias, 'stream_error,words=4', { stream: true }),
      );
      expect(reply.status).toBe(200);
      expect(reply.text).toContain('event: error');
      expect(reply.text).not.toContain('event: message_stop');
      await t.stack.settled();
      const reservations = await t.stack.reservations(key.accountId);
      expect(reservations.map((row) => [row.status, row.charged_credits])).toEqual([['held', 0n]]);
    }
  });
});
