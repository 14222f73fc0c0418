import { afterEach, describe, expect, it } from 'vitest';
import { anthropicAdapter, openaiAdapter } from './adapters/index.ts';
import { createUpstreamClient } from './client.ts';
import { readFixture } from './fixtures/read-fixture.ts';
import { relayNonStreaming } from './relay.ts';
import { startFakeUpstream } from './testing/fake-upstream.ts';
import { JSON_HEADERS, memoryResponse } from './testing/responses.ts';
import type { MeteredSurface, UpstreamAdapter } from './types.ts';
import { classifyUpstreamStatus } from './upstream-status.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const CASES: Array<{ surface: MeteredSurface; adapter: UpstreamAdapter; fixture: string; upstream: string }> =
  [
    {
      surface: 'messages',
      adapter: anthropicAdapter,
      fixture: 'anthropic-message-tool-use.json',
      upstream: 'claude-sonnet-4-5-20250929',
    },
    {
      surface: 'chat_completions',
      adapter: openaiAdapter,
      fixture: 'openai-chat-tool-calls.json',
      upstream: 'gpt-4o-mini',
    },
    {
      surface: 'responses',
      adapter: openaiAdapter,
      fixture: 'openai-responses-function-call.json',
      upstream: 'gpt-4.1',
    },
  ];

function relay(
  surface: MeteredSurface,
  adapter: UpstreamAdapter,
  status: number,
  body: string,
  upstream = 'm',
) {
  return relayNonStreaming({
    response: memoryResponse(status, JSON_HEADERS, [body]),
    surface,
    adapter,
    alias: 'house-model',
    upstreamModel: upstream,
  });
}

describe('relayNonStreaming: success', () => {
  for (const { surface, adapter, fixture, upstream } of CASES) {
    it(`relays a ${surface} answer unchanged but for the model, with its usage`, async () => {
      const text = readFixture(fixture);
      const result = await relay(surface, adapter, 200, text, upstream);
      if (!result.ok) throw result.error;
      expect(result.status).toBe(200);
      expect(result.contentType).toBe('application/json');
      expect(result.body).not.toContain(upstream);
      // Byte for byte the provider's body (tool calls included), only the model value differs.
      expect(result.body).toBe(text.replace(/"model": "[^"]+"/, '"model": "house-model"'));
      expect(result.usage.inputTokens > 0n && result.usage.outputTokens > 0n).toBe(true);
    });
  }
});

describe('relayNonStreaming: failures', () => {
  it('answers a 2xx body that is not JSON with upstream_invalid_response and releases', async () => {
    for (const body of ['<html>502 Bad Gateway</html>', '{"id":', '', '[1,2]', 'null']) {
      const result = await relay('messages', anthropicAdapter, 200, body);
      expect(result).toMatchObject({ ok: false, settle: 'release' });
      if (!result.ok)
        expect([result.error.code, result.error.status]).toEqual(['upstream_invalid_response', 502]);
    }
  });

  it('holds a valid answer without usage as billing_settlement_pending', async () => {
    const body = readFixture('openai-chat-tool-calls.json').replace(/"usage": \{[\s\S]*?\n {2}\},/, '');
    expect(body).not.toContain('prompt_tokens');
    const result = await relay('chat_completions', openaiAdapter, 200, body);
    expect(result).toMatchObject({ ok: false, settle: 'hold' });
    if (!result.ok)
      expect([result.error.code, result.error.status]).toEqual(['billing_settlement_pending', 502]);
  });

  it('passes a provider 4xx status as upstream_rejected with a message of our own, and releases', async () => {
    const providerBody = JSON.stringify({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message:
          'prompt is too long: 210000 tokens > 200000 maximum for claude-sonnet-4-5-20250929 on api.anthropic.com, see https://docs.anthropic.com/errors',
      },
      request_id: 'req_011CSHoEeqs5C35K2UUqR7Fy',
    });
    const result = await relay('messages', anthropicAdapter, 400, providerBody, 'claude-sonnet-4-5');
    expect(result).toMatchObject({ ok: false, settle: 'release' });
    if (result.ok) return;
    expect(result.error.code).toBe('upstream_rejected');
    expect(result.error.status).toBe(400);
    expect(result.error.message).toBe('The input is longer than house-model accepts. Nothing was charged.');
  });

  it('keeps each fixable 4xx status as it is', async () => {
    for (const status of [400, 404, 409, 413, 422]) {
      const result = await relay('responses', openaiAdapter, status, '{"error":{"message":"Invalid value"}}');
      if (result.ok) throw new Error('expected a failure');
      expect([result.error.code, result.error.status, result.settle]).toEqual([
        'upstream_rejected',
        status,
        'release',
      ]);
    }
  });

  it('answers credential, proxy, timeout, rate and server failures as upstream_unavailable without the provider text', async () => {
    for (const status of [301, 401, 403, 407, 408, 429, 500, 502, 503, 529]) {
      const result = await relay(
        'chat_completions',
        openaiAdapter,
        status,
        '{"error":{"message":"Incorrect API key provided: sk-proj-abc***xyz at api.openai.com"}}',
      );
      if (result.ok) throw new Error('expected a failure');
      expect([result.error.code, result.error.status, result.settle]).toEqual([
        'upstream_unavailable',
        503,
        'release',
      ]);
      expect(result.error.message).not.toMatch(/api key|sk-proj|openai/i);
    }
  });

  it('releases when the body is cut while being read (real socket)', async () => {
    const upstream = await startFakeUpstream((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': '5000' });
      response.write('{"id":"msg_1","model":"m","usage":');
      setTimeout(() => response.destroy(), 20); // cut once the head and part of the body have left
    });
    const client = createUpstreamClient({
      connectTimeoutMs: 1_000,
      headersTimeoutMs: 2_000,
      bodyTimeoutMs: 2_000,
    });
    cleanups.push(
      () => upstream.close(),
      () => client.close(),
    );
    const response = await client.send({
      url: `${upstream.url}/v1/messages`,
      headers: {},
      body: '{}',
      signal: new AbortController().signal,
    });
    const result = await relayNonStreaming({
      response,
      surface: 'messages',
      adapter: anthropicAdapter,
      alias: 'a',
      upstreamModel: 'm',
    });
    expect(result).toMatchObject({ ok: false, settle: 'release', error: { code: 'upstream_unavailable' } });
  });
});

describe('classifyUpstreamStatus', () => {
  it('maps provider statuses to the catalogue', () => {
    const table = [200, 201, 204, 302, 400, 401, 403, 404, 407, 408, 413, 422, 429, 500, 503, 529].map(
      (status) => {
        const error = classifyUpstreamStatus(status);
        return [status, error?.code ?? 'ok', error?.status ?? null];
      },
    );
    expect(table).toEqual([
      [200, 'ok', null],
      [201, 'ok', null],
      [204, 'ok', null],
      [302, 'upstream_unavailable', 503],
      [400, 'upstream_rejected', 400],
      [401, 'upstream_unavailable', 503],
      [403, 'upstream_unavailable', 503],
      [404, 'upstream_rejected', 404],
      [407, 'upstream_unavailable', 503],
      [408, 'upstream_unavailable', 503],
      [413, 'upstream_rejected', 413],
      [422, 'upstream_rejected', 422],
      [429, 'upstream_unavailable', 503],
      [500, 'upstream_unavailable', 503],
      [503, 'upstream_unavailable', 503],
      [529, 'upstream_unavailable', 503],
    ]);
  });
});
