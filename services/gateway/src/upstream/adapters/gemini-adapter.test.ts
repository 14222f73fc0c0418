import type { GatewayProvider } from '@tollgate/schemas';
import { describe, expect, it } from 'vitest';
import { readFixture, readJsonFixture } from '../fixtures/read-fixture.ts';
import { SseParser } from '../sse.ts';
import type { StreamEventVerdict, UpstreamTarget } from '../types.ts';
import { plainUsage } from '../types.ts';
import { geminiAdapter } from './gemini-adapter.ts';
import { getAdapter } from './index.ts';

const provider: GatewayProvider = {
  id: 'prov_g',
  kind: 'gemini',
  baseUrl: 'https://generativelanguage.googleapis.com',
  credentialRef: 'TOLLGATE_PROVIDER_GEMINI',
};

function target(overrides: Partial<UpstreamTarget> = {}): UpstreamTarget {
  return {
    provider,
    credential: 'AIza-provider-key',
    upstreamModel: 'gemini-2.5-flash',
    alias: 'g',
    ...overrides,
  };
}

function feed(text: string, split = 0): { verdicts: StreamEventVerdict[]; usage: unknown } {
  const tracker = geminiAdapter.createStreamUsageTracker('gemini');
  const parser = new SseParser();
  const pieces = split > 0 ? text.match(new RegExp(`[\\s\\S]{1,${split}}`, 'g'))! : [text];
  const verdicts: StreamEventVerdict[] = [];
  for (const piece of pieces) for (const event of parser.push(piece)) verdicts.push(tracker.observe(event));
  for (const event of parser.flush()) verdicts.push(tracker.observe(event));
  return { verdicts, usage: tracker.usage() };
}

describe('gemini adapter: request', () => {
  it('is the adapter of the gemini kind, serving no surface natively', () => {
    expect(getAdapter('gemini')).toBe(geminiAdapter);
    expect(geminiAdapter.surfaces).toEqual([]);
    expect(geminiAdapter.wireProtocol).toBe('gemini');
  });

  it('names the model in the URL and sends the key in x-goog-api-key, never in the URL', () => {
    const clientHeaders = new Headers({ authorization: 'Bearer sk-client', 'x-goog-api-key': 'client' });
    const plain = geminiAdapter.buildRequest({ target: target(), surface: 'gemini', clientHeaders });
    expect(plain).toEqual({
      url: 'https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': 'AIza-provider-key' },
    });
    const streamed = geminiAdapter.buildRequest({
      target: target({ upstreamModel: 'models/gemini-2.5-pro' }),
      surface: 'gemini',
      clientHeaders,
      stream: true,
    });
    expect(streamed.url).toBe(
      'https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse',
    );
    expect(streamed.url).not.toContain('key=');
  });

  it('takes a base URL that names its version as it is, and sends no key when there is none', () => {
    const request = geminiAdapter.buildRequest({
      target: target({
        provider: { ...provider, baseUrl: 'http://127.0.0.1:8090/v1beta/' },
        credential: null,
      }),
      surface: 'gemini',
      clientHeaders: new Headers(),
    });
    expect(request.url).toBe('http://127.0.0.1:8090/v1beta/models/gemini-2.5-flash:generateContent');
    expect(request.headers).toEqual({ 'content-type': 'application/json' });
  });

  it('refuses any other protocol as model_unavailable', () => {
    expect(() =>
      geminiAdapter.buildRequest({ target: target(), surface: 'messages', clientHeaders: new Headers() }),
    ).toThrow(expect.objectContaining({ code: 'model_unavailable' }));
  });

  it("reads Gemini's refusals of its key and project as ours, any other 400 as the caller's", () => {
    const invalidKey = {
      error: {
        code: 400,
        message: 'API key not valid. Please pass a valid API key.',
        status: 'INVALID_ARGUMENT',
        details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID' }],
      },
    };
    expect(geminiAdapter.isCredentialRefusal?.(400, invalidKey)).toBe(true);
    expect(
      geminiAdapter.isCredentialRefusal?.(400, {
        error: { code: 400, message: 'User location is not supported', status: 'FAILED_PRECONDITION' },
      }),
    ).toBe(true);
    expect(
      geminiAdapter.isCredentialRefusal?.(400, {
        error: { code: 400, message: 'Invalid JSON payload', status: 'INVALID_ARGUMENT' },
      }),
    ).toBe(false);
    expect(geminiAdapter.isCredentialRefusal?.(404, invalidKey)).toBe(false);
  });
});

describe('gemini adapter: usage', () => {
  it('bills thoughts as output and takes the cached tokens out of the input of a whole answer', () => {
    const usage = geminiAdapter.extractUsage(
      'gemini',
      readJsonFixture('gemini-generate-content-thinking-tool.json'),
    );
    // promptTokenCount 412 (256 of them cached), candidates 18 + thoughts 128.
    expect(usage).toEqual({ ...plainUsage(412n - 256n, 18n + 128n), cacheReadTokens: 256n });
  });

  it('adds tool-use prompt tokens to the input; zero counts may be left out, broken ones may not', () => {
    expect(
      geminiAdapter.extractUsage('gemini', {
        usageMetadata: { promptTokenCount: 10, toolUsePromptTokenCount: 5, candidatesTokenCount: 2 },
      }),
    ).toEqual(plainUsage(15n, 2n));
    expect(geminiAdapter.extractUsage('gemini', { usageMetadata: { promptTokenCount: 7 } })).toEqual(
      plainUsage(7n, 0n),
    );
    for (const usageMetadata of [
      {},
      { candidatesTokenCount: 3 },
      { promptTokenCount: -1 },
      { promptTokenCount: 3, thoughtsTokenCount: 1.5 },
      { promptTokenCount: '3' },
    ])
      expect(geminiAdapter.extractUsage('gemini', { usageMetadata })).toBeNull();
    expect(geminiAdapter.extractUsage('gemini', { candidates: [] })).toBeNull();
  });

  it('takes the last cumulative usageMetadata of a stream, never their sum, in any chunking', () => {
    for (const split of [0, 1, 9, 100]) {
      const { verdicts, usage } = feed(readFixture('gemini-stream-thinking-tool.sse'), split);
      expect(usage).toEqual(plainUsage(98n, 24n + 52n));
      expect(verdicts).toEqual(['pass', 'pass', 'pass', 'terminal']);
    }
  });

  it('has no usage when the stream is cut before the chunk with the finishReason', () => {
    const chunks = readFixture('gemini-stream-thinking-tool.sse').split('\r\n\r\n');
    const { verdicts, usage } = feed(`${chunks.slice(0, 3).join('\r\n\r\n')}\r\n\r\n`);
    expect(verdicts).toEqual(['pass', 'pass', 'pass']);
    expect(usage).toBeNull();
  });

  it('ends a stream whose prompt was blocked, with its usage', () => {
    const { verdicts, usage } = feed(
      'data: {"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":12,"totalTokenCount":12}}\r\n\r\n',
    );
    expect(verdicts).toEqual(['terminal']);
    expect(usage).toEqual(plainUsage(12n, 0n));
  });

  it('flags an error chunk and a chunk that is not JSON', () => {
    const { verdicts } = feed(
      'data: {"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}\r\n\r\ndata: {"candidates":\r\n\r\n',
    );
    expect(verdicts).toEqual(['provider_error', 'invalid']);
  });
});
