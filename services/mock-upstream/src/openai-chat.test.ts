import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningMockUpstream, startMockUpstream } from './server.ts';
import { dataOf, expectedInputTokens, postJson, readSse } from './test-support.ts';

let mock: RunningMockUpstream;
beforeAll(async () => {
  mock = await startMockUpstream({ expectedApiKey: 'sk-upstream' });
});
afterAll(() => mock.close());

const auth = { authorization: 'Bearer sk-upstream' };
const tools = [
  {
    type: 'function',
    function: { name: 'lookup', parameters: { type: 'object', properties: { query: { type: 'string' } } } },
  },
];

function chat(content: string, extra: Record<string, unknown> = {}) {
  return { model: 'gpt-test', messages: [{ role: 'user', content }], ...extra };
}

type Chunk = { choices: { delta: Record<string, unknown>; finish_reason: string | null }[]; usage?: unknown };

describe('POST /v1/chat/completions', () => {
  it('answers a chat.completion with full usage details', async () => {
    const body = chat('Hi');
    const response = await postJson(mock.url, '/v1/chat/completions', body, auth);
    expect(response.status).toBe(200);
    const input = expectedInputTokens(body);
    expect(await response.json()).toMatchObject({
      object: 'chat.completion',
      model: 'gpt-test',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Hello from the mock upstream.' },
          finish_reason: 'stop',
        },
      ],
      usage: {
        prompt_tokens: input,
        completion_tokens: 5,
        total_tokens: input + 5,
        prompt_tokens_details: { cached_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0 },
      },
    });
  });

  it('streams role, content and finish chunks, then [DONE], without usage unless asked', async () => {
    const response = await postJson(
      mock.url,
      '/v1/chat/completions',
      chat('@mock(words=3)', { stream: true }),
      auth,
    );
    const frames = await readSse(response);
    expect(frames.every((frame) => frame.event === undefined)).toBe(true);
    expect(frames.at(-1)?.data).toBe('[DONE]');
    const chunks = dataOf(frames.slice(0, -1)) as Chunk[];
    expect(
      chunks.every(
        (chunk) => chunk.usage === undefined && (chunk as { model?: string }).model === 'gpt-test',
      ),
    ).toBe(true);
    expect(chunks[0]?.choices[0]?.delta).toMatchObject({ role: 'assistant', content: '' });
    expect(chunks.slice(1, 4).map((chunk) => chunk.choices[0]?.delta.content)).toEqual([
      'Hello',
      ' from',
      ' the',
    ]);
    expect(chunks.at(-1)?.choices[0]).toMatchObject({ delta: {}, finish_reason: 'stop' });
    expect(chunks).toHaveLength(5);
  });

  it('adds a final usage chunk with empty choices when include_usage is set', async () => {
    const body = chat('@mock(words=3)', { stream: true, stream_options: { include_usage: true } });
    const frames = await readSse(await postJson(mock.url, '/v1/chat/completions', body, auth));
    const chunks = dataOf(frames.slice(0, -1)) as Chunk[];
    expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null)).toBe(true);
    const input = expectedInputTokens(body);
    expect(chunks.at(-1)).toMatchObject({
      choices: [],
      usage: { prompt_tokens: input, completion_tokens: 3, total_tokens: input + 3 },
    });
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe('stop');
  });

  it('honours max_completion_tokens before max_tokens, with finish_reason length', async () => {
    const body = chat('@mock(words=20)', { max_completion_tokens: 4, max_tokens: 10 });
    const completion = await (await postJson(mock.url, '/v1/chat/completions', body, auth)).json();
    expect(completion).toMatchObject({
      choices: [{ finish_reason: 'length' }],
      usage: { completion_tokens: 4 },
    });
    const legacy = await (
      await postJson(mock.url, '/v1/chat/completions', chat('@mock(words=20)', { max_tokens: 6 }), auth)
    ).json();
    expect(legacy).toMatchObject({ usage: { completion_tokens: 6 } });
  });

  it('answers tool_calls for the first declared function', async () => {
    const completion = await (
      await postJson(mock.url, '/v1/chat/completions', chat('@mock(tool)', { tools }), auth)
    ).json();
    expect(completion).toHaveProperty('choices.0', {
      index: 0,
      logprobs: null,
      finish_reason: 'tool_calls',
      message: {
        role: 'assistant',
        content: null,
        refusal: null,
        annotations: [],
        tool_calls: [
          {
            id: expect.stringMatching(/^call_/),
            type: 'function',
            function: { name: 'lookup', arguments: '{"query":"mock"}' },
          },
        ],
      },
    });
  });

  it('streams tool calls as an id chunk then argument fragments', async () => {
    const body = chat('@mock(tool)', { tools, stream: true });
    const chunks = dataOf(
      (await readSse(await postJson(mock.url, '/v1/chat/completions', body, auth))).slice(0, -1),
    ) as Chunk[];
    type Call = { index: number; id?: string; function: { name?: string; arguments: string } };
    const calls = chunks.flatMap((chunk) => (chunk.choices[0]?.delta.tool_calls as Call[] | undefined) ?? []);
    expect(calls[0]).toMatchObject({
      index: 0,
      id: expect.stringMatching(/^call_/),
      type: 'function',
      function: { name: 'lookup' },
    });
    expect(calls.slice(1).every((call) => call.id === undefined && call.index === 0)).toBe(true);
    expect(JSON.parse(calls.map((call) => call.function.arguments).join(''))).toEqual({ query: 'mock' });
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('tool_calls');
  });

  it('refuses a wrong bearer key with invalid_api_key', async () => {
    const response = await postJson(mock.url, '/v1/chat/completions', chat('hi'), {
      authorization: 'Bearer nope',
    });
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({
      error: {
        message: expect.any(String),
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_api_key',
      },
    });
  });
});
