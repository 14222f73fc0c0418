import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningMockUpstream, startMockUpstream } from './server.ts';
import { dataOf, postJson, readSse, readUntilBroken } from './test-support.ts';

let mock: RunningMockUpstream;
beforeAll(async () => {
  mock = await startMockUpstream({ expectedApiKey: 'gemini-key' });
});
afterAll(() => mock.close());

const GENERATE = '/v1beta/models/gemini-mock-2:generateContent';
const STREAM = '/v1beta/models/gemini-mock-2:streamGenerateContent?alt=sse';
const key = { 'x-goog-api-key': 'gemini-key' };

// biome-ignore lint/suspicious/noExplicitAny: provider JSON read in assertions
type Json = Record<string, any>;

const weather = {
  functionDeclarations: [
    {
      name: 'get_weather',
      parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  ],
};

function ask(text: string, extra: Json = {}): Json {
  return { contents: [{ role: 'user', parts: [{ text }] }], ...extra };
}

describe('Gemini generateContent', () => {
  it('answers with the model of the URL, thoughts and cached tokens reported apart', async () => {
    const response = await postJson(
      mock.url,
      GENERATE,
      ask('Hi @mock(input_tokens=40,output_tokens=5,cache_read=16,reasoning_tokens=9,thinking)'),
      key,
    );
    expect(response.status).toBe(200);
    const body = (await response.json()) as Json;
    expect(body).toMatchObject({
      candidates: [
        {
          content: {
            role: 'model',
            parts: [{ thought: true }, { text: 'Hello from the mock upstream.' }],
          },
          finishReason: 'STOP',
        },
      ],
      usageMetadata: {
        // The prompt count includes the cached tokens (40 uncached + 16 read from the cache).
        promptTokenCount: 56,
        candidatesTokenCount: 5,
        thoughtsTokenCount: 9,
        cachedContentTokenCount: 16,
        totalTokenCount: 70,
      },
      modelVersion: 'gemini-mock-2',
    });
  });

  it('calls a tool when forced, with STOP, and answers in text once the result came back', async () => {
    const forced = await postJson(
      mock.url,
      GENERATE,
      ask('Weather?', { tools: [weather], toolConfig: { functionCallingConfig: { mode: 'ANY' } } }),
      key,
    );
    const body = (await forced.json()) as Json;
    expect(body.candidates[0]).toMatchObject({
      content: { parts: [{ functionCall: { name: 'get_weather', args: { city: 'mock' } } }] },
      finishReason: 'STOP',
    });
    const after = await postJson(
      mock.url,
      GENERATE,
      {
        contents: [
          { role: 'user', parts: [{ text: 'Weather? @mock(tool)' }] },
          { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'mock' } } }] },
          {
            role: 'user',
            parts: [{ functionResponse: { name: 'get_weather', response: { output: 'sunny' } } }],
          },
        ],
        tools: [weather],
      },
      key,
    );
    expect(((await after.json()) as Json).candidates[0].content.parts).toEqual([
      { text: 'Hello from the mock upstream.' },
    ]);
  });

  it('refuses a wrong key with 400 API_KEY_INVALID and a missing one with 403, as Gemini does', async () => {
    const wrong = await postJson(mock.url, GENERATE, ask('Hi'), { 'x-goog-api-key': 'other' });
    expect(wrong.status).toBe(400);
    expect(await wrong.json()).toMatchObject({
      error: { code: 400, status: 'INVALID_ARGUMENT', details: [{ reason: 'API_KEY_INVALID' }] },
    });
    const missing = await postJson(mock.url, GENERATE, ask('Hi'), {});
    expect(missing.status).toBe(403);
    expect(await missing.json()).toMatchObject({ error: { code: 403, status: 'PERMISSION_DENIED' } });
  });

  it("writes errors in Google's shape: 429 RESOURCE_EXHAUSTED, 503 UNAVAILABLE", async () => {
    for (const [status, name] of [
      [429, 'RESOURCE_EXHAUSTED'],
      [503, 'UNAVAILABLE'],
    ] as const) {
      const response = await postJson(mock.url, GENERATE, ask(`Hi @mock(status=${status})`), key);
      expect(response.status).toBe(status);
      expect(await response.json()).toMatchObject({ error: { code: status, status: name } });
    }
  });

  it('counts tokens', async () => {
    const response = await postJson(
      mock.url,
      '/v1beta/models/gemini-mock-2:countTokens',
      ask('Hi @mock(input_tokens=12)'),
      key,
    );
    expect(await response.json()).toEqual({ totalTokens: 12 });
  });
});

describe('Gemini streamGenerateContent', () => {
  it('repeats the cumulative usage on every chunk, the last one finishing with the final figures', async () => {
    const response = await postJson(
      mock.url,
      STREAM,
      ask('Hi @mock(input_tokens=30,words=3,reasoning_tokens=4,thinking)'),
      key,
    );
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const chunks = dataOf(await readSse(response)) as Json[];
    expect(chunks.map((chunk) => chunk.candidates[0].content.parts[0].text)).toEqual([
      'The mock considers the request.',
      'Hello',
      ' from',
      ' the',
    ]);
    expect(chunks.map((chunk) => chunk.candidates[0].finishReason)).toEqual([
      undefined,
      undefined,
      undefined,
      'STOP',
    ]);
    expect(chunks.map((chunk) => chunk.usageMetadata.candidatesTokenCount)).toEqual([undefined, 1, 2, 3]);
    expect(chunks.every((chunk) => chunk.usageMetadata.promptTokenCount === 30)).toBe(true);
    expect(chunks.every((chunk) => chunk.usageMetadata.thoughtsTokenCount === 4)).toBe(true);
  });

  it('streams as one JSON array without alt=sse', async () => {
    const response = await postJson(
      mock.url,
      '/v1beta/models/gemini-mock-2:streamGenerateContent',
      ask('Hi @mock(words=2)'),
      key,
    );
    const chunks = (await response.json()) as Json[];
    expect(chunks).toHaveLength(2);
    expect(chunks[1]!.candidates[0].finishReason).toBe('STOP');
  });

  it('ends with an error chunk on stream_error, and is cut before its usage on cut_after', async () => {
    const failed = dataOf(
      await readSse(await postJson(mock.url, STREAM, ask('Hi @mock(stream_error)'), key)),
    );
    expect(failed.at(-1)).toMatchObject({ error: { code: 500, status: 'INTERNAL' } });
    const cut = await readUntilBroken(await postJson(mock.url, STREAM, ask('Hi @mock(cut_after=2)'), key));
    expect(cut.broken).toBe(true);
    expect(cut.text).not.toContain('finishReason');
  });
});
