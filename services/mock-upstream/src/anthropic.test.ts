import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningMockUpstream, startMockUpstream } from './server.ts';
import { dataOf, expectedInputTokens, postJson, readSse } from './test-support.ts';

let mock: RunningMockUpstream;
beforeAll(async () => {
  mock = await startMockUpstream({ expectedApiKey: 'sk-ant-upstream' });
});
afterAll(() => mock.close());

const auth = { 'x-api-key': 'sk-ant-upstream', 'anthropic-version': '2023-06-01' };
const weatherTool = {
  name: 'get_weather',
  description: 'Weather of a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } },
};

function messages(content: string, extra: Record<string, unknown> = {}) {
  return { model: 'claude-test', max_tokens: 100, messages: [{ role: 'user', content }], ...extra };
}

describe('POST /v1/messages', () => {
  it('answers a message object echoing the model, with predictable usage', async () => {
    const body = messages('Hi there');
    const response = await postJson(mock.url, '/v1/messages', body, auth);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-test',
      content: [{ type: 'text', text: 'Hello from the mock upstream.' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: {
        input_tokens: expectedInputTokens(body),
        output_tokens: 5,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      },
    });
  });

  it('streams the real event sequence with cumulative output tokens', async () => {
    const body = messages('@mock(words=4)', { stream: true });
    const response = await postJson(mock.url, '/v1/messages', body, auth);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames = await readSse(response);
    const events = dataOf(frames);
    expect(frames.map((frame) => frame.event)).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    // Each frame's event name matches its data type, as the SDKs expect.
    expect(events.map((event) => event.type)).toEqual(frames.map((frame) => frame.event));
    expect(events[0]).toMatchObject({
      message: {
        model: 'claude-test',
        content: [],
        usage: { input_tokens: expectedInputTokens(body), output_tokens: 1 },
      },
    });
    const text = events
      .filter((event) => event.type === 'content_block_delta')
      .map((event) => (event.delta as { text: string }).text)
      .join('');
    expect(text).toBe('Hello from the mock');
    expect(events[8]).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: 4 },
    });
  });

  it('stops at max_tokens and never reports more output than asked', async () => {
    const response = await postJson(
      mock.url,
      '/v1/messages',
      messages('@mock(words=50)', { max_tokens: 7 }),
      auth,
    );
    expect(await response.json()).toMatchObject({
      stop_reason: 'max_tokens',
      usage: { output_tokens: 7 },
      content: [{ type: 'text', text: 'Hello from the mock upstream. Hello from' }],
    });
  });

  it('answers a tool_use block for the first declared tool', async () => {
    const body = messages('weather? @mock(tool)', {
      tools: [weatherTool, { name: 'other', input_schema: {} }],
    });
    const message = await (await postJson(mock.url, '/v1/messages', body, auth)).json();
    expect(message).toMatchObject({ stop_reason: 'tool_use' });
    expect(message).toHaveProperty('content', [
      {
        type: 'tool_use',
        id: expect.stringMatching(/^toolu_/),
        name: 'get_weather',
        input: { city: 'mock', days: 1 },
      },
    ]);
  });

  it('streams a tool call as input_json_delta fragments', async () => {
    const body = messages('weather? @mock(tool)', { tools: [weatherTool], stream: true });
    const events = dataOf(await readSse(await postJson(mock.url, '/v1/messages', body, auth)));
    expect(events[1]).toMatchObject({ content_block: { type: 'tool_use', name: 'get_weather', input: {} } });
    const fragments = events
      .filter((event) => event.type === 'content_block_delta')
      .map((event) => event.delta as { type: string; partial_json: string });
    expect(fragments.length).toBeGreaterThan(1);
    expect(fragments.every((fragment) => fragment.type === 'input_json_delta')).toBe(true);
    expect(JSON.parse(fragments.map((fragment) => fragment.partial_json).join(''))).toEqual({
      city: 'mock',
      days: 1,
    });
    expect(events.at(-2)).toMatchObject({ delta: { stop_reason: 'tool_use' } });
  });

  it('refuses a missing or wrong x-api-key with an authentication_error', async () => {
    for (const headers of [{}, { 'x-api-key': 'sk-ant-wrong' }] as Record<string, string>[]) {
      const response = await postJson(mock.url, '/v1/messages', messages('hi'), headers);
      expect(response.status).toBe(401);
      expect(await response.json()).toEqual({
        type: 'error',
        error: { type: 'authentication_error', message: expect.any(String) },
      });
    }
  });

  it('records anthropic-version and anthropic-beta with the request', async () => {
    const headers = { ...auth, 'anthropic-beta': 'prompt-caching-2024-07-31' };
    await postJson(mock.url, '/v1/messages', messages('hi @mock(tag=versions)'), headers);
    const [recorded] = mock.requests('versions');
    expect(recorded).toMatchObject({
      method: 'POST',
      path: '/v1/messages',
      anthropicVersion: '2023-06-01',
      anthropicBeta: 'prompt-caching-2024-07-31',
    });
    expect(recorded?.headers['x-api-key']).toBe('sk-ant-upstream');
  });

  it('answers a body that is not JSON with an invalid_request_error', async () => {
    const response = await postJson(mock.url, '/v1/messages', '{"model":', auth);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });
});
