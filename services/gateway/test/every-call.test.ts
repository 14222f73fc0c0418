import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { LimitRequest } from '../src/limiter/limiter.ts';
import { bodyFor, type FundedKey, uniqueTag, useStack } from './support.ts';

// The ceilings hold for every authenticated call, whatever becomes of it (docs/behaviour.md,
// Limits). count_tokens bodies are capped lower than the service's here, to test that cap cheaply.
const COUNT_TOKENS_MAX = 64 * 1024;
const t = useStack('gw-every-call', {
  gatewayEnv: { COUNT_TOKENS_MAX_REQUEST_BYTES: String(COUNT_TOKENS_MAX) },
});
const CREDITS = 10_000_000n;

/** Resolves once the gateway's limiter has answered a claim of this key (e.g. taken its slot). */
function limitsTaken(keyId: string): Promise<void> {
  const limiter = t.stack.gateways[0]!.deps.limiter;
  const acquire = limiter.acquire;
  return new Promise((resolve) => {
    limiter.acquire = async (claim: LimitRequest) => {
      const decision = await acquire.call(limiter, claim);
      if (claim.keyId === keyId) {
        limiter.acquire = acquire;
        resolve();
      }
      return decision;
    };
  });
}

/** A count_tokens call whose body is still arriving: it holds whatever the gateway gave it. */
function countTokensInFlight(key: FundedKey) {
  const body = JSON.stringify(bodyFor('/v1/messages/count_tokens', 'claude-test'));
  const url = new URL(`${t.stack.gatewayUrl}/v1/messages/count_tokens`);
  const outgoing = request({
    host: url.hostname,
    port: url.port,
    path: url.pathname,
    method: 'POST',
    headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
    agent: false,
  });
  const answered = new Promise<{ status: number; text: string }>((resolve, reject) => {
    outgoing.on('response', (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => {
        text += chunk;
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
    });
    outgoing.on('error', reject);
  });
  outgoing.write(body.slice(0, 10));
  return {
    finish(): Promise<{ status: number; text: string }> {
      outgoing.end(body.slice(10));
      return answered;
    },
  };
}

describe('the concurrency ceiling', () => {
  it('holds a slot for count_tokens, GET /v1/models and GET /v1/key/status while they run', async () => {
    const key = await t.key({ credits: CREDITS, limits: { concurrency: 1, requestsPerMinute: 100 } });
    const taken = limitsTaken(key.keyId);
    const counting = countTokensInFlight(key);
    await taken;
    t.expectError(await t.get('/v1/models', key.secret), 429, 'concurrency_limit_exceeded');
    t.expectError(await t.get('/v1/key/status', key.secret), 429, 'concurrency_limit_exceeded');
    t.expectError(
      await t.post('/v1/chat/completions', key.secret, bodyFor('/v1/chat/completions', 'gpt-test')),
      429,
      'concurrency_limit_exceeded',
    );
    const counted = await counting.finish();
    expect(counted.status, counted.text).toBe(200);
    // Freed with the answer.
    expect((await t.get('/v1/models', key.secret)).status).toBe(200);
    expect((await t.get('/v1/key/status', key.secret)).status).toBe(200);
  });
});

describe('the per-key request ceiling', () => {
  it('counts calls refused by the checks before the reservation; past it they get rate_limit_exceeded', async () => {
    const key = await t.key({ credits: CREDITS, limits: { requestsPerMinute: 4, maxOutputTokens: 100 } });
    const calls = t.upstreamCalls();
    const chat = (extra: Record<string, unknown>) =>
      t.post('/v1/chat/completions', key.secret, {
        ...bodyFor('/v1/chat/completions', 'gpt-test'),
        ...extra,
      });
    t.expectError(await chat({ frobnicate: 1 }), 400, 'unsupported_parameter');
    t.expectError(await chat({ model: 'no-such-model' }), 400, 'invalid_model');
    t.expectError(await chat({ max_tokens: 1000 }), 400, 'max_output_tokens_exceeded');
    t.expectError(
      await t.post('/v1/messages', key.secret, bodyFor('/v1/messages', 'gpt-test')),
      400,
      'model_unavailable',
    );
    const limited = await chat({});
    t.expectError(limited, 429, 'rate_limit_exceeded');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // An invalid call past the ceiling is refused for the ceiling too.
    t.expectError(await chat({ frobnicate: 1 }), 429, 'rate_limit_exceeded');
    expect(t.upstreamCalls()).toBe(calls);
    await t.expectUntouched(key, { credits: CREDITS });
  });

  it('counts a count_tokens call before its body is read: past the ceiling even a bad body gets 429', async () => {
    const key = await t.key({ credits: CREDITS, limits: { requestsPerMinute: 2 } });
    const path = '/v1/messages/count_tokens';
    t.expectError(await t.post(path, key.secret, '{not json'), 400, 'invalid_request');
    expect((await t.post(path, key.secret, bodyFor(path, 'claude-test'))).status).toBe(200);
    t.expectError(await t.post(path, key.secret, '{not json'), 429, 'rate_limit_exceeded');
  });
});

describe('count_tokens work', () => {
  it('has a body limit of its own, below the service limit', async () => {
    const key = await t.key({ credits: CREDITS });
    const big = (path: string, alias: string) => ({
      ...bodyFor(path, alias),
      system: 'x'.repeat(COUNT_TOKENS_MAX),
    });
    const path = '/v1/messages/count_tokens';
    t.expectError(await t.post(path, key.secret, big(path, 'claude-test')), 413, 'request_too_large');
    // The same body is within the metered route's limit.
    const reply = await t.post('/v1/messages', key.secret, big('/v1/messages', 'claude-test'));
    expect(reply.status, reply.text).toBe(200);
  });

  it('is parsed and counted in the worker pool, not on the event loop', async () => {
    const key = await t.key({ credits: CREDITS });
    const tokens = t.stack.gateways[0]!.deps.tokens;
    const count = tokens.count;
    let counted = 0;
    tokens.count = (body, signal) => {
      counted += 1;
      return count.call(tokens, body, signal);
    };
    try {
      const path = '/v1/messages/count_tokens';
      const reply = await t.post(path, key.secret, bodyFor(path, 'claude-test'));
      expect(reply.status, reply.text).toBe(200);
      expect(JSON.parse(reply.text).input_tokens).toBeGreaterThan(0);
      t.expectError(
        await t.post(path, key.secret, bodyFor(path, 'claude-test', '', { max_tokens: 5 })),
        400,
        'unsupported_parameter',
      );
      expect(counted).toBe(2);
    } finally {
      tokens.count = count;
    }
  });
});

describe('a failure after the reservation and before the upstream call', () => {
  it('releases the reservation at once and answers server_error', async () => {
    const key = await t.key({ credits: CREDITS });
    const billing = t.stack.gateways[0]!.deps.billing;
    const holdSlot = billing.holdSlot;
    billing.holdSlot = () => {
      billing.holdSlot = holdSlot;
      throw new Error('injected fault after the reservation');
    };
    const tag = uniqueTag('fault');
    const reply = await t.post(
      '/v1/chat/completions',
      key.secret,
      bodyFor('/v1/chat/completions', 'gpt-test', `tag=${tag}`),
    );
    t.expectError(reply, 500, 'server_error');
    expect(t.tagged(tag)).toBe(0);
    await t.stack.settled();
    expect(await t.stack.balances(key.accountId)).toMatchObject({ credits: CREDITS, reservedCredits: 0n });
    const [reservation] = await t.stack.reservations(key.accountId);
    expect(reservation).toMatchObject({ status: 'released', outcome: 'gateway_error', http_status: 500 });
  });
});

describe('routes', () => {
  it('answers an unknown route under /v1/messages in the messages style, elsewhere in the openai style', async () => {
    const key = await t.key({ credits: CREDITS });
    const messages = await t.post('/v1/messages/batches', key.secret, {});
    expect(messages.status).toBe(404);
    expect(JSON.parse(messages.text)).toEqual({
      type: 'error',
      error: { type: 'not_found_error', message: expect.any(String), service_code: 'unknown_route' },
    });
    const other = await t.get('/v1/embeddings', key.secret);
    expect(other.status).toBe(404);
    expect(JSON.parse(other.text)).toEqual({
      error: { type: 'not_found_error', message: expect.any(String), code: 'unknown_route' },
    });
    t.expectNothingLeaked(messages.text + other.text);
  });

  it('answers a WebSocket upgrade on /v1/responses with 426, so Codex uses HTTP at once', async () => {
    const url = new URL(t.stack.gatewayUrl);
    const reply = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const outgoing = request({
        host: url.hostname,
        port: url.port,
        path: '/v1/responses',
        headers: {
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-version': '13',
          'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
        },
        agent: false,
      });
      outgoing.on('response', (response) => {
        let body = '';
        response.on('data', (chunk) => {
          body += chunk;
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      });
      outgoing.on('upgrade', () => reject(new Error('the gateway accepted a WebSocket')));
      outgoing.on('error', reject);
      outgoing.end();
    });
    expect(reply.status).toBe(426);
    expect(JSON.parse(reply.body)).toMatchObject({
      error: { type: 'invalid_request_error', code: 'websocket_not_supported' },
    });
    const plain = await t.get('/v1/responses', 'sk-none');
    expect(plain.status).toBe(404);
  });

  it('serves a request whose target is in absolute form, metered routes included', async () => {
    const key = await t.key({ credits: CREDITS });
    const url = new URL(t.stack.gatewayUrl);
    const tag = uniqueTag('absolute');
    const status = await new Promise<number>((resolve, reject) => {
      const outgoing = request({
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path: 'http://gateway.example.test/v1/chat/completions',
        headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
        agent: false,
      });
      outgoing.on('response', (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      });
      outgoing.on('error', reject);
      outgoing.end(JSON.stringify(bodyFor('/v1/chat/completions', 'gpt-test', `tag=${tag}`)));
    });
    expect(status).toBe(200);
    expect(t.tagged(tag)).toBe(1);
  });
});
