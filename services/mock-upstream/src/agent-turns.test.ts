/**
 * What an agent loop and the translation matrix need from the mock, in each provider's own wire
 * format: two calls in parallel, a call of a tool chosen by name, reasoning before the answer,
 * and a plain answer once the last turn carries a tool's result.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { THINKING_TEXT } from './reply-plan.ts';
import { type RunningMockUpstream, startMockUpstream } from './server.ts';
import { dataOf, postJson, readSse } from './test-support.ts';

let mock: RunningMockUpstream;
beforeAll(async () => {
  mock = await startMockUpstream();
});
afterAll(() => mock.close());

const schema = { type: 'object', properties: { city: { type: 'string' } } };
const ARGS = { city: 'mock' };

const messagesBody = (content: unknown, extra: Record<string, unknown> = {}) => ({
  model: 'm',
  max_tokens: 1000,
  tools: [
    { name: 'weather', input_schema: schema },
    { name: 'clock', input_schema: { type: 'object', properties: {} } },
  ],
  messages: [{ role: 'user', content }],
  ...extra,
});

const chatBody = (messages: unknown[], extra: Record<string, unknown> = {}) => ({
  model: 'm',
  tools: [
    { type: 'function', function: { name: 'weather', parameters: schema } },
    { type: 'function', function: { name: 'clock', parameters: { type: 'object', properties: {} } } },
  ],
  messages,
  ...extra,
});

const responsesBody = (input: unknown, extra: Record<string, unknown> = {}) => ({
  model: 'm',
  tools: [
    { type: 'function', name: 'weather', parameters: schema },
    { type: 'function', name: 'clock', parameters: { type: 'object', properties: {} } },
  ],
  input,
  ...extra,
});

describe('messages', () => {
  it('answers with a signed thinking block and two tool_use blocks', async () => {
    const response = await postJson(mock.url, '/v1/messages', messagesBody('Go @mock(tools=2,thinking)'));
    const message = (await response.json()) as {
      content: Array<Record<string, unknown>>;
      stop_reason: string;
    };
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content.map((block) => block.type)).toEqual(['thinking', 'tool_use', 'tool_use']);
    expect(message.content[0]).toMatchObject({ thinking: THINKING_TEXT, signature: expect.any(String) });
    expect(message.content.slice(1).map((block) => [block.name, block.input])).toEqual([
      ['weather', ARGS],
      ['clock', {}],
    ]);
    expect(new Set(message.content.slice(1).map((block) => block.id)).size).toBe(2);
  });

  it('streams each block at its own index, started and stopped once', async () => {
    const body = messagesBody('Go @mock(tools=2,thinking)', { stream: true });
    const events = dataOf(await readSse(await postJson(mock.url, '/v1/messages', body)));
    const starts = events.filter((event) => event.type === 'content_block_start');
    const stops = events.filter((event) => event.type === 'content_block_stop');
    expect(starts.map((event) => event.index)).toEqual([0, 1, 2]);
    expect(stops.map((event) => event.index)).toEqual([0, 1, 2]);
    const deltas = events.filter((event) => event.type === 'content_block_delta');
    expect(deltas.map((event) => (event.delta as { type: string }).type)).toContain('signature_delta');
    const json = (index: number) =>
      deltas
        .filter((event) => event.index === index)
        .map((event) => (event.delta as { partial_json: string }).partial_json)
        .join('');
    expect([JSON.parse(json(1)), JSON.parse(json(2))]).toEqual([ARGS, {}]);
  });

  it('calls a tool by name, then answers once the tool_result came back', async () => {
    const first = await postJson(mock.url, '/v1/messages', messagesBody('Go @mock(tool_name=clock)'));
    const call = ((await first.json()) as { content: Array<{ id: string; name: string }> }).content[0]!;
    expect(call.name).toBe('clock');
    const followUp = messagesBody('Go @mock(tool_name=clock)', {
      messages: [
        { role: 'user', content: 'Go @mock(tool_name=clock)' },
        { role: 'assistant', content: [{ type: 'tool_use', id: call.id, name: 'clock', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '12:00' }] },
      ],
    });
    const answer = (await (await postJson(mock.url, '/v1/messages', followUp)).json()) as {
      stop_reason: string;
      content: Array<{ type: string }>;
    };
    expect(answer.stop_reason).toBe('end_turn');
    expect(answer.content.map((block) => block.type)).toEqual(['text']);
  });
});

describe('chat completions', () => {
  it('answers two parallel tool_calls with reasoning_content, streamed at indexes 0 and 1', async () => {
    const messages = [{ role: 'user', content: 'Go @mock(tools=2,thinking)' }];
    const response = await postJson(mock.url, '/v1/chat/completions', chatBody(messages));
    const { choices } = (await response.json()) as {
      choices: Array<{ finish_reason: string; message: Record<string, unknown> }>;
    };
    expect(choices[0]?.finish_reason).toBe('tool_calls');
    expect(choices[0]?.message.reasoning_content).toBe(THINKING_TEXT);
    const calls = choices[0]?.message.tool_calls as Array<{ id: string; function: { name: string } }>;
    expect(calls.map((call) => call.function.name)).toEqual(['weather', 'clock']);
    expect(new Set(calls.map((call) => call.id)).size).toBe(2);

    const streamed = chatBody(messages, { stream: true });
    const chunks = dataOf(
      (await readSse(await postJson(mock.url, '/v1/chat/completions', streamed))).slice(0, -1),
    );
    const heads = chunks.flatMap((chunk) =>
      (
        (chunk.choices as Array<{ delta: { tool_calls?: Array<{ index: number; id?: string }> } }>)[0]?.delta
          .tool_calls ?? []
      ).filter((call) => call.id !== undefined),
    );
    expect(heads.map((call) => call.index)).toEqual([0, 1]);
  });

  it('answers once the last message is the tool result', async () => {
    const messages = [
      { role: 'user', content: 'Go @mock(tool)' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
    ];
    const response = await postJson(mock.url, '/v1/chat/completions', chatBody(messages));
    const { choices } = (await response.json()) as { choices: Array<{ finish_reason: string }> };
    expect(choices[0]?.finish_reason).toBe('stop');
  });
});

describe('responses', () => {
  it('answers a reasoning item (encrypted only when included) and two function calls', async () => {
    const body = responsesBody('Go @mock(tools=2,thinking)', { include: ['reasoning.encrypted_content'] });
    const response = (await (await postJson(mock.url, '/v1/responses', body)).json()) as {
      output: Array<Record<string, unknown>>;
    };
    expect(response.output.map((item) => item.type)).toEqual(['reasoning', 'function_call', 'function_call']);
    expect(response.output[0]).toMatchObject({
      summary: [{ type: 'summary_text', text: THINKING_TEXT }],
      encrypted_content: expect.any(String),
    });
    const plain = (await (
      await postJson(mock.url, '/v1/responses', responsesBody('Go @mock(thinking)'))
    ).json()) as {
      output: Array<Record<string, unknown>>;
    };
    expect(plain.output[0]).not.toHaveProperty('encrypted_content');
  });

  it('streams each item at its own output_index with increasing sequence numbers', async () => {
    const body = responsesBody('Go @mock(tools=2,thinking)', { stream: true });
    const events = dataOf(await readSse(await postJson(mock.url, '/v1/responses', body)));
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    const added = events.filter((event) => event.type === 'response.output_item.added');
    expect(added.map((event) => [event.output_index, (event.item as { type: string }).type])).toEqual([
      [0, 'reasoning'],
      [1, 'function_call'],
      [2, 'function_call'],
    ]);
    expect(events.at(-1)?.type).toBe('response.completed');
  });

  it('answers once the last input item is a call output', async () => {
    const input = [
      { role: 'user', content: 'Go @mock(tool)' },
      { type: 'function_call', call_id: 'call_1', name: 'weather', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_1', output: 'sunny' },
    ];
    const response = (await (await postJson(mock.url, '/v1/responses', responsesBody(input))).json()) as {
      output: Array<{ type: string }>;
    };
    expect(response.output.map((item) => item.type)).toEqual(['message']);
  });
});
