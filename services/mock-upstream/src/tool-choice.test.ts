/**
 * A forced tool_choice is honoured as the providers do: the answer is a call of the (named or
 * first) tool, with arguments filled from its schema, streamed and not; `none` never calls one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleArguments } from './reply-plan.ts';
import { type RunningMockUpstream, startMockUpstream } from './server.ts';
import { dataOf, postJson, readSse } from './test-support.ts';
import { anthropicChoice, openAiChoice } from './tool-choice.ts';

let mock: RunningMockUpstream;
beforeAll(async () => {
  mock = await startMockUpstream({ expectedApiKey: 'sk-upstream' });
});
afterAll(() => mock.close());

// biome-ignore lint/suspicious/noExplicitAny: provider bodies, checked field by field
async function answer(path: string, body: unknown, headers: Record<string, string>): Promise<any> {
  return (await postJson(mock.url, path, body, headers)).json();
}

const bearer = { authorization: 'Bearer sk-upstream' };
const anthropicAuth = { 'x-api-key': 'sk-upstream' };
const WEATHER = {
  type: 'object',
  properties: {
    city: { type: 'string' },
    days: { type: 'integer' },
    metric: { type: 'boolean' },
    unit: { enum: ['celsius', 'fahrenheit'] },
    when: { anyOf: [{ type: 'number' }, { type: 'null' }] },
  },
  required: ['city', 'days', 'metric', 'unit'],
};
const WEATHER_ARGS = { city: 'mock', days: 1, metric: true, unit: 'celsius', when: 1 };
const TIME = { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] };

const anthropicBody = (tool_choice: unknown, stream = false) => ({
  model: 'm',
  max_tokens: 500,
  stream,
  messages: [{ role: 'user', content: 'What is the weather?' }],
  tools: [
    { name: 'get_time', input_schema: TIME },
    { name: 'get_weather', input_schema: WEATHER },
  ],
  ...(tool_choice === undefined ? {} : { tool_choice }),
});
const chatBody = (tool_choice: unknown, stream = false) => ({
  model: 'm',
  stream,
  messages: [{ role: 'user', content: 'What is the weather?' }],
  tools: [
    { type: 'function', function: { name: 'get_time', parameters: TIME } },
    { type: 'function', function: { name: 'get_weather', parameters: WEATHER } },
  ],
  ...(tool_choice === undefined ? {} : { tool_choice }),
});
const responsesBody = (tool_choice: unknown, stream = false) => ({
  model: 'm',
  stream,
  input: 'What is the weather?',
  tools: [
    { type: 'function', name: 'get_time', parameters: TIME },
    { type: 'function', name: 'get_weather', parameters: WEATHER },
  ],
  ...(tool_choice === undefined ? {} : { tool_choice }),
});

describe('reading tool_choice', () => {
  it('maps each protocol spelling to auto, none or required (with a name)', () => {
    expect(anthropicChoice({ type: 'any' })).toEqual({ mode: 'required' });
    expect(anthropicChoice({ type: 'tool', name: 'x' })).toEqual({ mode: 'required', name: 'x' });
    expect(anthropicChoice({ type: 'none' })).toEqual({ mode: 'none' });
    expect(anthropicChoice({ type: 'auto' })).toEqual({ mode: 'auto' });
    expect(anthropicChoice(undefined)).toEqual({ mode: 'auto' });
    expect(openAiChoice('required')).toEqual({ mode: 'required' });
    expect(openAiChoice('none')).toEqual({ mode: 'none' });
    expect(openAiChoice('auto')).toEqual({ mode: 'auto' });
    expect(openAiChoice({ type: 'function', function: { name: 'x' } })).toEqual({
      mode: 'required',
      name: 'x',
    });
    expect(openAiChoice({ type: 'function', name: 'x' })).toEqual({ mode: 'required', name: 'x' });
  });

  it('fills every property of the schema with a value of its type', () => {
    expect(JSON.parse(sampleArguments(WEATHER))).toEqual(WEATHER_ARGS);
  });
});

describe('Anthropic messages', () => {
  it('calls the first tool on {type: "any"} and the named one on {type: "tool"}', async () => {
    const any = await answer('/v1/messages', anthropicBody({ type: 'any' }), anthropicAuth);
    expect(any).toMatchObject({
      stop_reason: 'tool_use',
      content: [{ type: 'tool_use', name: 'get_time', input: { zone: 'mock' } }],
    });
    const named = await answer(
      '/v1/messages',
      anthropicBody({ type: 'tool', name: 'get_weather' }),
      anthropicAuth,
    );
    expect(named).toMatchObject({
      stop_reason: 'tool_use',
      content: [{ type: 'tool_use', name: 'get_weather', input: WEATHER_ARGS }],
    });
  });

  it('streams a forced call as tool_use with its input in fragments', async () => {
    const response = await postJson(
      mock.url,
      '/v1/messages',
      anthropicBody({ type: 'tool', name: 'get_weather' }, true),
      anthropicAuth,
    );
    const events = dataOf(await readSse(response));
    const start = events.find((event) => event.type === 'content_block_start') as {
      content_block: { type: string; name: string };
    };
    expect(start.content_block).toMatchObject({ type: 'tool_use', name: 'get_weather' });
    const json = events
      .filter((event) => event.type === 'content_block_delta')
      .map((event) => (event.delta as { partial_json: string }).partial_json)
      .join('');
    expect(JSON.parse(json)).toEqual(WEATHER_ARGS);
    const delta = events.find((event) => event.type === 'message_delta') as {
      delta: { stop_reason: string };
    };
    expect(delta.delta.stop_reason).toBe('tool_use');
  });

  it('answers text on auto and on none, even with the tool directive under none', async () => {
    const auto = await answer('/v1/messages', anthropicBody({ type: 'auto' }), anthropicAuth);
    expect(auto).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text' }] });
    const body = { ...anthropicBody({ type: 'none' }), messages: [{ role: 'user', content: '@mock(tool)' }] };
    const none = await answer('/v1/messages', body, anthropicAuth);
    expect(none).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text' }] });
  });
});

describe('OpenAI chat completions', () => {
  it('calls the first function on "required" and the named one on {type: "function"}', async () => {
    const required = await answer('/v1/chat/completions', chatBody('required'), bearer);
    expect(required.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      message: { tool_calls: [{ type: 'function', function: { name: 'get_time' } }] },
    });
    const named = await answer(
      '/v1/chat/completions',
      chatBody({ type: 'function', function: { name: 'get_weather' } }),
      bearer,
    );
    const call = named.choices[0].message.tool_calls[0];
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual(WEATHER_ARGS);
  });

  it('streams a forced call as tool_call deltas', async () => {
    const response = await postJson(mock.url, '/v1/chat/completions', chatBody('required', true), bearer);
    const frames = await readSse(response);
    const chunks = dataOf(frames.slice(0, -1)) as Array<{
      choices: Array<{
        delta: { tool_calls?: Array<{ function: { name?: string; arguments: string } }> };
        finish_reason: string | null;
      }>;
    }>;
    const calls = chunks.flatMap((chunk) => chunk.choices[0]?.delta.tool_calls ?? []);
    expect(calls[0]?.function.name).toBe('get_time');
    expect(JSON.parse(calls.map((call) => call.function.arguments).join(''))).toEqual({ zone: 'mock' });
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('tool_calls');
  });

  it('answers text on "none"', async () => {
    const none = await answer('/v1/chat/completions', chatBody('none'), bearer);
    expect(none.choices[0]).toMatchObject({
      finish_reason: 'stop',
      message: { content: 'Hello from the mock upstream.' },
    });
  });
});

describe('OpenAI responses', () => {
  it('calls the first function on "required" and the named one on {type: "function", name}', async () => {
    const required = await answer('/v1/responses', responsesBody('required'), bearer);
    expect(required.output).toMatchObject([{ type: 'function_call', name: 'get_time' }]);
    const named = await answer(
      '/v1/responses',
      responsesBody({ type: 'function', name: 'get_weather' }),
      bearer,
    );
    expect(named.output[0]).toMatchObject({ type: 'function_call', name: 'get_weather' });
    expect(JSON.parse(named.output[0].arguments)).toEqual(WEATHER_ARGS);
  });

  it('streams a forced call with its arguments', async () => {
    const response = await postJson(
      mock.url,
      '/v1/responses',
      responsesBody({ type: 'function', name: 'get_weather' }, true),
      bearer,
    );
    const events = dataOf(await readSse(response));
    const done = events.find((event) => event.type === 'response.function_call_arguments.done') as {
      arguments: string;
    };
    expect(JSON.parse(done.arguments)).toEqual(WEATHER_ARGS);
    const completed = events.find((event) => event.type === 'response.completed') as {
      response: { output: Array<{ type: string; name: string }> };
    };
    expect(completed.response.output[0]).toMatchObject({ type: 'function_call', name: 'get_weather' });
  });

  it('answers text on "none"', async () => {
    const none = await answer('/v1/responses', responsesBody('none'), bearer);
    expect(none.output[0]).toMatchObject({ type: 'message' });
  });
});
