import type { GatewayProvider } from '@tollgate/schemas';
import { describe, expect, it } from 'vitest';
import { readFixture, readJsonFixture } from '../fixtures/read-fixture.ts';
import { SseParser } from '../sse.ts';
import type { StreamEventVerdict, UpstreamTarget } from '../types.ts';
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
  it('sums input, cache writes and cache reads of a non-streamed tool-use answer', () => {
    const usage = anthropicAdapter.extractUsage(
      'messages',
      readJsonFixture('anthropic-message-tool-use.json'),
    );
    expect(usage).toEqual({ inputTokens: 472n + 100n + 2048n, outputTokens: 91n });
  });

  it('treats missing cache figures as zero but missing or broken counts as no usage', () => {
    expect(
      anthropicAdapter.extractUsage('messages', { usage: { input_tokens: 3, output_tokens: 4 } }),
    ).toEqual({
      inputTokens: 3n,
      outputTokens: 4n,
    });
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
    expect(usage).toEqual({ inputTokens: 25n, outputTokens: 15n });
    expect(verdicts.at(-1)).toBe('terminal');
    expect(verdicts.slice(0, -1).every((verdict) => verdict === 'pass')).toBe(true);
  });

  it('takes the latest cache figures from message_delta of a streamed tool call, in any chunking', () => {
    for (const split of [0, 1, 7, 64]) {
      expect(feed('anthropic-stream-tool-use.sse', split).usage).toEqual({
        inputTokens: 472n + 100n + 2048n,
        outputTokens: 89n,
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
