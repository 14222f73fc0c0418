import type { GatewayProvider } from '@tollgate/schemas';
import { describe, expect, it } from 'vitest';
import { readFixture, readJsonFixture } from '../fixtures/read-fixture.ts';
import { SseParser } from '../sse.ts';
import type { MeteredSurface, StreamEventVerdict, UpstreamTarget } from '../types.ts';
import { plainUsage } from '../types.ts';
import { getAdapter } from './index.ts';
import { openaiAdapter } from './openai-adapter.ts';

function target(baseUrl: string, credential: string | null): UpstreamTarget {
  const provider: GatewayProvider = { id: 'prov_2', kind: 'openai', baseUrl, credentialRef: null };
  return { provider, credential, upstreamModel: 'gpt-4o-mini', alias: 'fast' };
}

function feed(surface: MeteredSurface, text: string, split = 0) {
  const tracker = openaiAdapter.createStreamUsageTracker(surface);
  const parser = new SseParser();
  const pieces = split > 0 ? text.match(new RegExp(`[\\s\\S]{1,${split}}`, 'g'))! : [text];
  const verdicts: StreamEventVerdict[] = [];
  for (const piece of pieces) for (const event of parser.push(piece)) verdicts.push(tracker.observe(event));
  for (const event of parser.flush()) verdicts.push(tracker.observe(event));
  return { verdicts, usage: tracker.usage() };
}

describe('openai adapter: request', () => {
  it('is the adapter for the openai kind and speaks chat completions and responses', () => {
    expect(getAdapter('openai')).toBe(openaiAdapter);
    expect(openaiAdapter.surfaces).toEqual(['chat_completions', 'responses']);
  });

  it('posts to {base}/chat/completions and {base}/responses with the provider key as Bearer', () => {
    const clientHeaders = new Headers({
      authorization: 'Bearer sk-client-key',
      'x-api-key': 'sk-client-key',
      'openai-organization': 'org-client',
      'anthropic-beta': 'x',
    });
    const chat = openaiAdapter.buildRequest({
      target: target('https://api.openai.com/v1', 'sk-proj-provider'),
      surface: 'chat_completions',
      clientHeaders,
    });
    expect(chat).toEqual({
      url: 'https://api.openai.com/v1/chat/completions',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-proj-provider' },
    });
    const responses = openaiAdapter.buildRequest({
      target: target('https://api.openai.com/v1/', 'sk-proj-provider'),
      surface: 'responses',
      clientHeaders,
    });
    expect(responses.url).toBe('https://api.openai.com/v1/responses');
  });

  it('reaches an OpenAI-compatible server by base URL alone, without a credential', () => {
    const request = openaiAdapter.buildRequest({
      target: target('http://10.0.0.5:8000/v1', null),
      surface: 'chat_completions',
      clientHeaders: new Headers({ authorization: 'Bearer sk-client-key' }),
    });
    expect(request).toEqual({
      url: 'http://10.0.0.5:8000/v1/chat/completions',
      headers: { 'content-type': 'application/json' },
    });
  });

  it('refuses the messages surface as model_unavailable', () => {
    expect(() =>
      openaiAdapter.buildRequest({
        target: target('http://x/v1', null),
        surface: 'messages',
        clientHeaders: new Headers(),
      }),
    ).toThrow(expect.objectContaining({ code: 'model_unavailable' }));
  });
});

describe('openai adapter: non-streamed usage', () => {
  it('reads prompt and completion tokens of a chat answer with tool calls', () => {
    const body = readJsonFixture('openai-chat-tool-calls.json');
    expect(openaiAdapter.extractUsage('chat_completions', body)).toEqual(plainUsage(82n, 17n));
  });

  it('reads a responses answer with a function call, its cached tokens taken out of the input', () => {
    const body = readJsonFixture('openai-responses-function-call.json');
    expect(openaiAdapter.extractUsage('responses', body)).toEqual({
      ...plainUsage(291n - 128n, 23n),
      cacheReadTokens: 128n,
    });
  });

  it('reports cached prompt tokens of a chat answer as cache reads, counted once', () => {
    const usage = {
      prompt_tokens: 1000,
      completion_tokens: 7,
      prompt_tokens_details: { cached_tokens: 900 },
    };
    expect(openaiAdapter.extractUsage('chat_completions', { usage })).toEqual({
      ...plainUsage(100n, 7n),
      cacheReadTokens: 900n,
    });
    const overclaimed = { ...usage, prompt_tokens_details: { cached_tokens: 1001 } };
    expect(openaiAdapter.extractUsage('chat_completions', { usage: overclaimed })).toEqual(
      plainUsage(1000n, 7n),
    );
  });

  it('has no usage when the figures are missing or of the other protocol', () => {
    const chatBody = readJsonFixture('openai-chat-tool-calls.json');
    expect(openaiAdapter.extractUsage('responses', chatBody)).toBeNull();
    expect(openaiAdapter.extractUsage('chat_completions', { usage: null })).toBeNull();
    expect(openaiAdapter.extractUsage('chat_completions', { usage: { prompt_tokens: 5 } })).toBeNull();
    expect(openaiAdapter.extractUsage('chat_completions', [])).toBeNull();
  });
});

describe('openai adapter: chat streams', () => {
  it('takes usage from the final usage chunk and marks it as usage-only', () => {
    const { verdicts, usage } = feed('chat_completions', readFixture('openai-chat-stream-text.sse'));
    expect(usage).toEqual(plainUsage(9n, 12n));
    expect(verdicts).toEqual(['pass', 'pass', 'pass', 'pass', 'usage_only', 'terminal']);
  });

  it('reads a streamed tool call in any chunking', () => {
    for (const split of [0, 1, 13, 100]) {
      const { verdicts, usage } = feed(
        'chat_completions',
        readFixture('openai-chat-stream-tool-calls.sse'),
        split,
      );
      expect(usage).toEqual(plainUsage(68n, 16n));
      expect(verdicts.slice(-2)).toEqual(['usage_only', 'terminal']);
    }
  });

  it('has no usage when the server ignored include_usage', () => {
    const text = readFixture('openai-chat-stream-text.sse').replace(
      /data: \{[^\n]*"choices":\[\],[^\n]*\n\n/,
      '',
    );
    const { verdicts, usage } = feed('chat_completions', text);
    expect(usage).toBeNull();
    expect(verdicts.at(-1)).toBe('terminal');
  });

  it('keeps the latest figures when every chunk carries usage (vLLM continuous stats)', () => {
    const chunk = (completion: number) =>
      `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":5,"completion_tokens":${completion},"total_tokens":${5 + completion}}}\n\n`;
    const { verdicts, usage } = feed('chat_completions', `${chunk(1)}${chunk(2)}${chunk(3)}data: [DONE]\n\n`);
    expect(usage).toEqual(plainUsage(5n, 3n));
    expect(verdicts).toEqual(['pass', 'pass', 'pass', 'terminal']);
  });

  it('flags an error chunk and a chunk that is not JSON', () => {
    const { verdicts } = feed(
      'chat_completions',
      'data: {"error":{"message":"The server had an error","type":"server_error","code":null}}\n\ndata: {"id":\n\n',
    );
    expect(verdicts).toEqual(['provider_error', 'invalid']);
  });
});

describe('openai adapter: responses streams', () => {
  it('reads usage from response.completed of a streamed text and function call', () => {
    for (const split of [0, 1, 50]) {
      const text = readFixture('openai-responses-stream-function-call.sse');
      const { verdicts, usage } = feed('responses', text, split);
      expect(usage).toEqual(plainUsage(312n, 41n));
      expect(verdicts.at(-1)).toBe('terminal');
      expect(verdicts.filter((verdict) => verdict !== 'pass')).toEqual(['terminal']);
    }
  });

  it('counts response.incomplete as the end, with its usage', () => {
    const { verdicts, usage } = feed(
      'responses',
      'event: response.incomplete\ndata: {"type":"response.incomplete","sequence_number":9,"response":{"status":"incomplete","usage":{"input_tokens":10,"output_tokens":16}}}\n\n',
    );
    expect(verdicts).toEqual(['terminal']);
    expect(usage).toEqual(plainUsage(10n, 16n));
  });

  it('finds the event type in the data when a server sends no event names', () => {
    const { verdicts, usage } = feed(
      'responses',
      'data: {"type":"response.completed","sequence_number":3,"response":{"usage":{"input_tokens":1,"output_tokens":2}}}\n\n',
    );
    expect(verdicts).toEqual(['terminal']);
    expect(usage).toEqual(plainUsage(1n, 2n));
  });

  it('flags error and response.failed events', () => {
    const { verdicts, usage } = feed(
      'responses',
      'event: error\ndata: {"type":"error","code":"server_error","message":"x","param":null,"sequence_number":4}\n\n' +
        'event: response.failed\ndata: {"type":"response.failed","sequence_number":5,"response":{"status":"failed"}}\n\n',
    );
    expect(verdicts).toEqual(['provider_error', 'provider_error']);
    expect(usage).toBeNull();
  });
});
