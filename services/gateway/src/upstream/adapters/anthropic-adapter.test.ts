import type { GatewayProvider } from '@tollgate/schemas';
import { describe, expect, it } from 'vitest';
import { readFixture, readJsonFixture } from '../fixtures/read-fixture.ts';
import { SseParser } from '../sse.ts';
import type { StreamEventVerdict, UpstreamTarget } from '../types.ts';
import { plainUsage } from '../types.ts';
import { anthropicAdapter } from './anthropic-adapter.ts';
import { getAdapter } from './index.ts';

const provider: GatewayProvider = {
  id: 'prov_1',
  kind: 'anthropic',
  baseUrl: 'https://api.anthropic.com',
  credentialRef: 'ANTHROPIC_API_KEY',
};

function target(overrides: Partial<UpstreamTarget> = {}): UpstreamTarget {
  return { provider, credential: 'sk-ant-provider', upstreamModel: 'claude-x', alias: 'smart', ...overrides };
}

function feed(name: string, split = 0): { verdicts: StreamEventVerdict[]; usage: unknown } {
  const tracker = anthropicAdapter.createStreamUsageTracker('messages');
  const parser = new SseParser();
  const text = readFixture(name);
  const pieces = split > 0 ? text.match(new RegExp(`[\\s\\S]{1,${split}}`, 'g'))! : [text];
  const verdicts: StreamEventVerdict[] = [];
  for (const piece of pieces) for (const event of parser.push(piece)) verdicts.push(tracker.observe(event));
  for (const event of parser.flush()) verdicts.push(tracker.observe(event));
  return { verdicts, usage: tracker.usage() };
}

describe('anthropic adapter: request', () => {
  it('is the adapter for the anthropic kind and speaks only messages', () => {
    expect(getAdapter('anthropic')).toBe(anthropicAdapter);
    expect(anthropicAdapter.surfaces).toEqual(['messages']);
  });

  it('posts to /v1/messages with the provider key, default version and JSON', () => {
    const clientHeaders = new Headers({
      'x-api-key': 'sk-client-key',
      authorization: 'Bearer sk-client-key',
      'user-agent': 'claude-cli/2.0',
      'x-stainless-os': 'Linux',
    });
    const request = anthropicAdapter.buildRequest({ target: target(), surface: 'messages', clientHeaders });
    expect(request).toEqual({
      url: 'https://api.anthropic.com/v1/messages',
      headers: {
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
        'x-api-key': 'sk-ant-provider',
      },
    });
  });

  it("passes the client's anthropic-version and every anthropic-beta value unchanged", () => {
    const clientHeaders = new Headers([
      ['anthropic-version', '2023-01-01'],
      ['anthropic-beta', 'interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14'],
      ['anthropic-beta', 'context-management-2025-06-27'],
    ]);
    const { headers } = anthropicAdapter.buildRequest({
      target: target(),
      surface: 'messages',
      clientHeaders,
    });
    expect(headers['anthropic-version']).toBe('2023-01-01');
    expect(headers['anthropic-beta']).toBe(
      'interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14, context-management-2025-06-27',
    );
  });

  it('accepts a base URL with a trailing slash or /v1, and sends no key when there is none', () => {
    for (const baseUrl of ['http://127.0.0.1:8090/', 'http://127.0.0.1:8090/v1', 'http://127.0.0.1:8090']) {
      const request = anthropicAdapter.buildRequest({
        target: target({ provider: { ...provider, baseUrl }, credential: null }),
        surface: 'messages',
        clientHeaders: new Headers(),
      });
      expect(request.url).toBe('http://127.0.0.1:8090/v1/messages');
      expect(request.headers).not.toHaveProperty('x-api-key');
    }
  });

  it('refuses a surface it does not speak as model_unavailable', () => {
    expect(() =>
      anthropicAdapter.buildRequest({ target: target(), surface: 'responses', clientHeaders: new Headers() }),
    ).toThrow(expect.objectContaining({ code: 'model_unavailable' }));
  });
});

describe('anthropic adapter: usage', () => {
  it('reports input, cache writes and cache reads of a non-streamed answer apart, each once', () => {
    const usage = anthropicAdapter.extractUsage(
      'messages',
      readJsonFixture('anthropic-message-tool-use.json'),
    );
    expect(usage).toEqual({ ...plainUsage(472n, 91n), cacheWriteTokens: 100n, cacheReadTokens: 2048n });
  });

  it('tells one-hour cache writes from five-minute ones when the split is reported', () => {
    const usage = {
      input_tokens: 10,
      cache_creation_input_tokens: 300,
      cache_read_input_tokens: 40,
      cache_creation: { ephemeral_5m_input_tokens: 100, ephemeral_1h_input_tokens: 200 },
      output_tokens: 5,
    };
    expect(anthropicAdapter.extractUsage('messages', { usage })).toEqual({
      ...plainUsage(10n, 5n),
      cacheReadTokens: 40n,
      cacheWriteTokens: 100n,
      cacheWrite1hTokens: 200n,
    });
    // Without the split every write is a five-minute one; a split beyond the total is not believed.
    const { cache_creation: _split, ...unsplit } = usage;
    expect(anthropicAdapter.extractUsage('messages', { usage: unsplit })?.cacheWriteTokens).toBe(300n);
    const overclaimed = { ...usage, cache_creation: { ephemeral_1h_input_tokens: 301 } };
    expect(anthropicAdapter.extractUsage('messages', { usage: overclaimed })).toMatchObject({
      cacheWriteTokens: 300n,
      cacheWrite1hTokens: 0n,
    });
  });

  it('treats missing cache figures as zero but missing or broken counts as no usage', () => {
    expect(
      anthropicAdapter.extractUsage('messages', { usage: { input_tokens: 3, output_tokens: 4 } }),
    ).toEqual(plainUsage(3n, 4n));
    for (const usage of [
      { output_tokens: 4 },
      { input_tokens: 3 },
      { input_tokens: -1, output_tokens: 4 },
      { input_tokens: 1.5, output_tokens: 4 },
      { input_tokens: '3', output_tokens: 4 },
      { input_tokens: 3, output_tokens: 4, cache_read_input_tokens: -2 },
    ]) {
      expect(anthropicAdapter.extractUsage('messages', { usage })).toBeNull();
    }
    expect(anthropicAdapter.extractUsage('messages', { id: 'msg_1' })).toBeNull();
    expect(anthropicAdapter.extractUsage('messages', null)).toBeNull();
  });

  it('reads a streamed text answer: input from message_start, output from message_delta', () => {
    const { verdicts, usage } = feed('anthropic-stream-text.sse');
    expect(usage).toEqual(plainUsage(25n, 15n));
    expect(verdicts.at(-1)).toBe('terminal');
    expect(verdicts.slice(0, -1).every((verdict) => verdict === 'pass')).toBe(true);
  });

  it('takes the latest cache figures from message_delta of a streamed tool call, in any chunking', () => {
    for (const split of [0, 1, 7, 64]) {
      expect(feed('anthropic-stream-tool-use.sse', split).usage).toEqual({
        ...plainUsage(472n, 89n),
        cacheWriteTokens: 100n,
        cacheReadTokens: 2048n,
      });
    }
  });

  it('has no usage until a message_delta gave the final output count', () => {
    const tracker = anthropicAdapter.createStreamUsageTracker('messages');
    const start = readFixture('anthropic-stream-text.sse').split('\n\n')[0]!;
    for (const event of new SseParser().push(`${start}\n\n`)) tracker.observe(event);
    expect(tracker.usage()).toBeNull();
  });

  it('flags provider error events and events that are not JSON', () => {
    const tracker = anthropicAdapter.createStreamUsageTracker('messages');
    const events = new SseParser().push(
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_de\n\n' +
        'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n' +
        'event: message_start\ndata: not json\n\n',
    );
    expect(events.map((event) => tracker.observe(event))).toEqual(['invalid', 'provider_error', 'invalid']);
  });
});
