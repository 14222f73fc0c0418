/**
 * What other translation layers get wrong in streams, each as a case (issue 25's list). Every
 * output is also checked to be well formed for its protocol (testing/well-formed.ts).
 */
import { describe, expect, it } from 'vitest';
import { anthropicAdapter, openaiAdapter } from '../upstream/adapters/index.ts';
import { relayStream } from '../upstream/relay-stream.ts';
import { memoryResponse, readAll, SSE_HEADERS } from '../upstream/testing/responses.ts';
import type { IrTool } from './ir.ts';
import { parseSse, requestWith, sse, translateSse, translationOf } from './testing/streams.ts';
import { checkStream } from './testing/well-formed.ts';
import { createStreamTranslator } from './translate.ts';

const chunk = (
  delta: Record<string, unknown>,
  finish: string | null = null,
  extra: Record<string, unknown> = {},
) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'gpt-x',
  choices: [{ index: 0, delta, finish_reason: finish }],
  ...extra,
});
const usageChunk = {
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'gpt-x',
  choices: [],
  usage: {
    prompt_tokens: 11,
    completion_tokens: 7,
    total_tokens: 18,
    prompt_tokens_details: { cached_tokens: 4 },
  },
};

describe('chat completions upstream', () => {
  it('waits for usage sent after finish_reason, and tells it once, exactly converted', () => {
    const text = sse([
      [undefined, chunk({ role: 'assistant', content: '' })],
      [undefined, chunk({ content: 'Hi' })],
      [undefined, chunk({}, 'stop')],
      [undefined, usageChunk],
      [undefined, '[DONE]'],
    ]);
    const summary = checkStream('messages', translateSse('messages', 'chat_completions', text));
    expect(summary).toMatchObject({ text: 'Hi', stop: 'end_turn' });
    // Anthropic's input excludes cache reads: 11 - 4 uncached, 4 read.
    expect(summary.usage).toEqual({
      input_tokens: 7,
      cache_read_input_tokens: 4,
      cache_creation_input_tokens: 0,
      output_tokens: 7,
    });
  });

  it('ignores metadata frames after the usage (no second usage, no stray content)', () => {
    const text = sse([
      [undefined, chunk({ content: 'Hi' }, 'stop')],
      [undefined, usageChunk],
      [
        undefined,
        {
          id: 'chatcmpl-1',
          object: 'chat.completion.chunk',
          choices: [],
          provider: 'x',
          usage: { prompt_tokens: 99, completion_tokens: 99 },
        },
      ],
      [
        undefined,
        {
          id: 'chatcmpl-1',
          object: 'chat.completion.chunk',
          choices: [{ index: 0, delta: { content: 'late' }, finish_reason: null }],
        },
      ],
      [undefined, '[DONE]'],
    ]);
    for (const caller of ['messages', 'responses'] as const) {
      const summary = checkStream(caller, translateSse(caller, 'chat_completions', text));
      expect(summary.text).toBe('Hi');
    }
    // The later figures are the provider's last word: usage is the latest complete one, told once.
    const summary = checkStream('messages', translateSse('messages', 'chat_completions', text));
    expect(summary.usage).toMatchObject({ input_tokens: 99, output_tokens: 99 });
  });

  it('keeps content that comes in the same chunk as the finish', () => {
    const text = sse([
      [undefined, chunk({ role: 'assistant', content: 'All in one' }, 'stop')],
      [undefined, usageChunk],
      [undefined, '[DONE]'],
    ]);
    expect(checkStream('messages', translateSse('messages', 'chat_completions', text)).text).toBe(
      'All in one',
    );
    expect(checkStream('responses', translateSse('responses', 'chat_completions', text)).text).toBe(
      'All in one',
    );
  });

  it('takes a whole call in one chunk', () => {
    const text = sse([
      [
        undefined,
        chunk(
          {
            tool_calls: [
              {
                index: 0,
                id: 'call_a',
                type: 'function',
                function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
              },
            ],
          },
          'tool_calls',
        ),
      ],
      [undefined, usageChunk],
      [undefined, '[DONE]'],
    ]);
    const summary = checkStream('messages', translateSse('messages', 'chat_completions', text));
    expect(summary.toolCalls).toEqual([{ id: 'call_a', name: 'get_weather', arguments: '{"city":"Oslo"}' }]);
    expect(summary.stop).toBe('tool_use');
  });

  it('separates parallel calls interleaved, without ids, and with a reused index', () => {
    const text = sse([
      [
        undefined,
        chunk({ tool_calls: [{ index: 0, id: 'call_a', function: { name: 'a', arguments: '' } }] }),
      ],
      [undefined, chunk({ tool_calls: [{ index: 1, function: { name: 'b', arguments: '{"x"' } }] })],
      [undefined, chunk({ tool_calls: [{ index: 0, function: { arguments: '{"y":' } }] })],
      [undefined, chunk({ tool_calls: [{ index: 1, function: { arguments: ':1}' } }] })],
      [undefined, chunk({ tool_calls: [{ index: 0, function: { arguments: '2}' } }] })],
      // The same index again with a new id: a third call.
      [
        undefined,
        chunk({ tool_calls: [{ index: 0, id: 'call_c', function: { name: 'c', arguments: '{}' } }] }),
      ],
      [undefined, chunk({}, 'tool_calls')],
      [undefined, usageChunk],
      [undefined, '[DONE]'],
    ]);
    for (const caller of ['messages', 'responses', 'chat_completions'] as const) {
      const summary = checkStream(caller, translateSse(caller, 'chat_completions', text));
      expect(summary.toolCalls.map(({ name, arguments: args }) => [name, args])).toEqual([
        ['a', '{"y":2}'],
        ['b', '{"x":1}'],
        ['c', '{}'],
      ]);
      const ids = summary.toolCalls.map((call) => call.id);
      expect(new Set(ids).size).toBe(3);
      expect(ids[0]).toBe('call_a');
      expect(ids[2]).toBe('call_c');
    }
  });

  it('does not lose the chunk that opens a new block (reasoning, then text in the same chunk)', () => {
    const text = sse([
      [undefined, chunk({ reasoning_content: 'Think.' })],
      [undefined, chunk({ reasoning_content: ' More.', content: 'Answer' })],
      [undefined, chunk({ content: '!' }, 'stop')],
      [undefined, usageChunk],
      [undefined, '[DONE]'],
    ]);
    const summary = checkStream('messages', translateSse('messages', 'chat_completions', text));
    expect(summary).toMatchObject({ reasoning: 'Think. More.', text: 'Answer!' });
    expect(checkStream('responses', translateSse('responses', 'chat_completions', text))).toMatchObject({
      reasoning: 'Think. More.',
      text: 'Answer!',
    });
  });
});

describe('messages upstream', () => {
  it('sends no delta for a block never opened or of another kind, and keeps the text of an unannounced block', () => {
    const text = sse([
      [
        'message_start',
        { type: 'message_start', message: { id: 'msg_1', usage: { input_tokens: 5, output_tokens: 1 } } },
      ],
      [
        'content_block_start',
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      ],
      [
        'content_block_delta',
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'one' } },
      ],
      // Wrong kind for block 0: dropped.
      [
        'content_block_delta',
        {
          type: 'content_block_delta',
          index: 0,
          delta: { type: 'input_json_delta', partial_json: '{"x":1}' },
        },
      ],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      // Block 1 never announced: its text is kept in a block of its own.
      [
        'content_block_delta',
        { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: ' two' } },
      ],
      // A tool delta for a block never started (no name known): dropped.
      [
        'content_block_delta',
        { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{}' } },
      ],
      [
        'message_delta',
        { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 3 } },
      ],
      ['message_stop', { type: 'message_stop' }],
    ]);
    for (const caller of ['chat_completions', 'responses'] as const) {
      const summary = checkStream(caller, translateSse(caller, 'messages', text));
      expect(summary.text).toBe('one two');
      expect(summary.toolCalls).toEqual([]);
    }
  });
});

describe('responses upstream', () => {
  const created = [
    'response.created',
    { type: 'response.created', sequence_number: 0, response: { id: 'resp_1', status: 'in_progress' } },
  ] as const;
  const completed = (status: string, extra: Record<string, unknown> = {}) =>
    [
      `response.${status}`,
      {
        type: `response.${status}`,
        response: {
          id: 'resp_1',
          status,
          usage: {
            input_tokens: 20,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens: 9,
            output_tokens_details: { reasoning_tokens: 2 },
          },
          ...extra,
        },
      },
    ] as [string, unknown];

  it('takes tool arguments given only in the final event', () => {
    const item = { id: 'fc_1', type: 'function_call', call_id: 'call_1', name: 'lookup', arguments: '' };
    for (const final of [
      [
        'response.function_call_arguments.done',
        {
          type: 'response.function_call_arguments.done',
          output_index: 0,
          item_id: 'fc_1',
          arguments: '{"q":"tea"}',
        },
      ],
      [
        'response.output_item.done',
        { type: 'response.output_item.done', output_index: 0, item: { ...item, arguments: '{"q":"tea"}' } },
      ],
    ] as Array<[string, unknown]>) {
      const text = sse([
        [...created],
        ['response.output_item.added', { type: 'response.output_item.added', output_index: 0, item }],
        final,
        [
          'response.output_item.done',
          { type: 'response.output_item.done', output_index: 0, item: { ...item, arguments: '{"q":"tea"}' } },
        ],
        completed('completed'),
      ]);
      const summary = checkStream('messages', translateSse('messages', 'responses', text));
      expect(summary.toolCalls).toEqual([{ id: 'call_1', name: 'lookup', arguments: '{"q":"tea"}' }]);
      expect(summary.stop).toBe('tool_use');
    }
  });

  it('maps an incomplete response to length, with its usage', () => {
    const text = sse([
      [...created],
      [
        'response.output_text.delta',
        {
          type: 'response.output_text.delta',
          output_index: 0,
          content_index: 0,
          item_id: 'msg_1',
          delta: 'Cut sho',
        },
      ],
      completed('incomplete', { incomplete_details: { reason: 'max_output_tokens' } }),
    ]);
    const messages = checkStream('messages', translateSse('messages', 'responses', text));
    expect(messages).toMatchObject({
      text: 'Cut sho',
      stop: 'max_tokens',
      usage: { input_tokens: 20, output_tokens: 9 },
    });
    const chat = checkStream('chat_completions', translateSse('chat_completions', 'responses', text));
    expect(chat).toMatchObject({
      stop: 'length',
      usage: { prompt_tokens: 20, completion_tokens: 9, completion_tokens_details: { reasoning_tokens: 2 } },
    });
  });
});

describe('responses caller', () => {
  it('numbers every event in order and never uses a call id as an item id', () => {
    const text = sse([
      [undefined, chunk({ content: 'Let me look.' })],
      [
        undefined,
        chunk(
          { tool_calls: [{ index: 0, id: 'call_1', function: { name: 'lookup', arguments: '{}' } }] },
          'tool_calls',
        ),
      ],
      [undefined, usageChunk],
      [undefined, '[DONE]'],
    ]);
    const out = translateSse('responses', 'chat_completions', text);
    const summary = checkStream('responses', out);
    expect(summary.toolCalls).toEqual([{ id: 'call_1', name: 'lookup', arguments: '{}' }]);
    const types = parseSse(out).map((event) => (event.data as { type: string }).type);
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
  });
});

describe('tool names', () => {
  it('shortens names over 64 characters or outside [a-zA-Z0-9_-] for the upstream, and turns them back', () => {
    const long = `mcp__server__${'x'.repeat(70)}`;
    const tools: IrTool[] = [long, 'read.file', 'ok_name'].map((name) => ({
      name,
      parameters: { type: 'object' },
    }));
    const translation = translationOf('messages', 'chat_completions', requestWith({ tools }));
    const upstreamNames = tools.map((tool) => translation.toolNames.upstream(tool.name));
    for (const name of upstreamNames) expect(name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    expect(upstreamNames[2]).toBe('ok_name');
    expect(new Set(upstreamNames).size).toBe(3);
    const text = sse(
      upstreamNames
        .map(
          (name, index) =>
            [
              undefined,
              chunk({ tool_calls: [{ index, id: `call_${index}`, function: { name, arguments: '{}' } }] }),
            ] as [undefined, unknown],
        )
        .concat([
          [undefined, chunk({}, 'tool_calls')],
          [undefined, usageChunk],
          [undefined, '[DONE]'],
        ]),
    );
    const summary = checkStream(
      'messages',
      translateSse('messages', 'chat_completions', text, { request: requestWith({ tools }) }),
    );
    expect(summary.toolCalls.map((call) => call.name)).toEqual([long, 'read.file', 'ok_name']);
  });
});

describe('a stream that ends without its terminal event', () => {
  it.each([
    ['messages', 'chat_completions', openaiAdapter],
    ['chat_completions', 'messages', anthropicAdapter],
    ['responses', 'messages', anthropicAdapter],
  ] as const)('ends the %s caller stream with its mid-stream error', async (caller, upstream, adapter) => {
    const upstreamText =
      upstream === 'chat_completions'
        ? sse([[undefined, chunk({ content: 'Hel' })]])
        : sse([
            [
              'message_start',
              {
                type: 'message_start',
                message: { id: 'msg_1', usage: { input_tokens: 5, output_tokens: 1 } },
              },
            ],
            [
              'content_block_start',
              { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
            ],
            [
              'content_block_delta',
              { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } },
            ],
          ]);
    const relayed = relayStream({
      response: memoryResponse(200, SSE_HEADERS, [upstreamText], null),
      surface: caller,
      upstreamSurface: upstream,
      translator: createStreamTranslator(translationOf(caller, upstream), {
        alias: 'a',
        providerId: 'p',
        includeUsage: true,
      }),
      adapter,
      alias: 'a',
      upstreamModel: 'm',
      clientAskedForUsage: true,
      abortUpstream: () => {},
    });
    const events = parseSse(await readAll(relayed.body));
    const last = events.at(-1)!;
    expect((await relayed.outcome).kind).toBe('upstream_failed');
    if (caller === 'chat_completions')
      expect(last.data).toMatchObject({ error: { code: 'upstream_invalid_response' } });
    else if (caller === 'messages')
      expect(last).toMatchObject({
        event: 'error',
        data: { error: { service_code: 'upstream_invalid_response' } },
      });
    else {
      expect(last).toMatchObject({ event: 'error', data: { code: 'upstream_invalid_response' } });
      // Its sequence number continues the caller's numbering.
      expect((last.data as { sequence_number: number }).sequence_number).toBe(events.length - 1);
    }
    expect(JSON.stringify(events)).toContain('Hel');
  });
});
