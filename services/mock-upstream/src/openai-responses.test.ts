import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningMockUpstream, startMockUpstream } from './server.ts';
import { dataOf, expectedInputTokens, postJson, readSse } from './test-support.ts';

let mock: RunningMockUpstream;
beforeAll(async () => {
  mock = await startMockUpstream();
});
afterAll(() => mock.close());

const tools = [
  {
    type: 'function',
    name: 'lookup',
    parameters: { type: 'object', properties: { query: { type: 'string' } } },
  },
];

function responses(input: string, extra: Record<string, unknown> = {}) {
  return { model: 'gpt-resp', input, ...extra };
}

const TEXT_EVENTS = [
  'response.created',
  'response.in_progress',
  'response.output_item.added',
  'response.content_part.added',
  'response.output_text.delta',
  'response.output_text.delta',
  'response.output_text.done',
  'response.content_part.done',
  'response.output_item.done',
  'response.completed',
];

describe('POST /v1/responses', () => {
  it('answers a response object with message output and usage', async () => {
    const body = responses('Hi');
    const response = await postJson(mock.url, '/v1/responses', body);
    const input = expectedInputTokens(body);
    expect(await response.json()).toMatchObject({
      object: 'response',
      status: 'completed',
      model: 'gpt-resp',
      output: [
        {
          type: 'message',
          role: 'assistant',
          content: [{ type: 'output_text', text: 'Hello from the mock upstream.' }],
        },
      ],
      usage: {
        input_tokens: input,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: 5,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: input + 5,
      },
    });
  });

  it('streams the named events with sequence numbers and a completed response with usage', async () => {
    const body = responses('@mock(words=2)', { stream: true });
    const frames = await readSse(await postJson(mock.url, '/v1/responses', body));
    expect(frames.map((frame) => frame.event)).toEqual(TEXT_EVENTS);
    const events = dataOf(frames);
    expect(events.map((event) => event.type)).toEqual(TEXT_EVENTS);
    expect(events.map((event) => event.sequence_number)).toEqual(TEXT_EVENTS.map((_, index) => index));
    expect(
      events.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta),
    ).toEqual(['Hello', ' from']);
    expect(events[6]).toMatchObject({ text: 'Hello from' });
    const completed = events.at(-1)?.response as Record<string, unknown>;
    expect(completed).toMatchObject({ status: 'completed', model: 'gpt-resp', usage: { output_tokens: 2 } });
    expect((completed.usage as { input_tokens: number }).input_tokens).toBe(expectedInputTokens(body));
    expect(events[0]).toMatchObject({ response: { usage: null } });
  });

  it('reports an incomplete response when max_output_tokens cuts the reply', async () => {
    const body = responses('@mock(words=30)', { max_output_tokens: 16 });
    const response = await (await postJson(mock.url, '/v1/responses', body)).json();
    expect(response).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      max_output_tokens: 16,
      usage: { output_tokens: 16 },
    });
    const frames = await readSse(await postJson(mock.url, '/v1/responses', { ...body, stream: true }));
    expect(frames.at(-1)?.event).toBe('response.incomplete');
  });

  it('answers a function_call output item for the first declared function', async () => {
    const response = await (
      await postJson(mock.url, '/v1/responses', responses('@mock(tool)', { tools }))
    ).json();
    expect(response).toHaveProperty('output', [
      {
        id: expect.stringMatching(/^fc_/),
        type: 'function_call',
        status: 'completed',
        call_id: expect.stringMatching(/^call_/),
        name: 'lookup',
        arguments: '{"query":"mock"}',
      },
    ]);
  });

  it('streams function call arguments as deltas then done', async () => {
    const frames = await readSse(
      await postJson(mock.url, '/v1/responses', responses('@mock(tool)', { tools, stream: true })),
    );
    const names = frames.map((frame) => frame.event);
    expect(names.slice(0, 3)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
    ]);
    expect(names.slice(-3)).toEqual([
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const events = dataOf(frames);
    const deltas = events.filter((event) => event.type === 'response.function_call_arguments.delta');
    expect(deltas.length).toBeGreaterThan(0);
    expect(deltas.map((event) => event.delta).join('')).toBe('{"query":"mock"}');
    expect(events.at(-3)).toMatchObject({ arguments: '{"query":"mock"}', name: 'lookup' });
  });

  it('answers other paths and methods with 404', async () => {
    expect((await postJson(mock.url, '/v1/completions', {})).status).toBe(404);
    expect((await fetch(`${mock.url}/v1/responses`)).status).toBe(404);
  });
});
