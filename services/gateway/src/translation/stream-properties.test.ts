/**
 * Property test: random valid event sequences of each protocol (any text, reasoning, tool calls,
 * arguments cut anywhere, chat's parallel calls interleaved, usage after the finish, any chunking
 * of the bytes), translated to each other protocol, always give a well-formed stream (every block
 * opened before a delta, closed once, one terminal event, usage at most once) saying the same
 * text, reasoning and tool arguments, with the usage converted exactly.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { WireProtocol } from './protocol.ts';
import { requestWith, sse, translateSse } from './testing/streams.ts';
import { checkStream } from './testing/well-formed.ts';

type Block =
  | { kind: 'text'; pieces: string[] }
  | { kind: 'reasoning'; pieces: string[] }
  | { kind: 'tool'; name: string; args: Record<string, unknown>; cuts: number[] };

interface Answer {
  blocks: Block[];
  usage: { input: number; cacheRead: number; output: number };
  /** Chat: how tool argument fragments of parallel calls are interleaved. */
  interleave: number[];
  /** Bytes per network chunk. */
  chunkSize: number;
}

const piece = fc.string({ minLength: 1, maxLength: 12 });
const pieces = fc.array(piece, { minLength: 1, maxLength: 5 });
const toolName = fc.stringMatching(/^[a-z][a-z0-9_]{0,20}$/);
const args = fc.dictionary(
  fc.stringMatching(/^[a-z]{1,6}$/),
  fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.boolean()),
  { maxKeys: 4 },
);

const answer: fc.Arbitrary<Answer> = fc
  .record({
    reasoning: fc.option(pieces, { nil: undefined }),
    text: fc.option(pieces, { nil: undefined }),
    tools: fc.array(fc.record({ name: toolName, args, cuts: fc.array(fc.nat(40), { maxLength: 4 }) }), {
      maxLength: 3,
    }),
    usage: fc.record({ input: fc.nat(100_000), output: fc.nat(100_000) }).chain((usage) =>
      fc.record({
        input: fc.constant(usage.input),
        output: fc.constant(usage.output),
        cacheRead: fc.nat(usage.input),
      }),
    ),
    interleave: fc.array(fc.nat(2), { maxLength: 30 }),
    chunkSize: fc.integer({ min: 1, max: 400 }),
  })
  .map(({ reasoning, text, tools, usage, interleave, chunkSize }) => {
    const blocks: Block[] = [];
    if (reasoning) blocks.push({ kind: 'reasoning', pieces: reasoning });
    if (text) blocks.push({ kind: 'text', pieces: text });
    // Tool names are made distinct: two calls of one tool are fine, but the summary compares by order.
    tools.forEach((tool, index) => {
      blocks.push({ kind: 'tool', name: `${tool.name}_${index}`, args: tool.args, cuts: tool.cuts });
    });
    return { blocks, usage, interleave, chunkSize };
  });

function fragments(block: Extract<Block, { kind: 'tool' }>): string[] {
  const json = JSON.stringify(block.args);
  const cuts = [...new Set(block.cuts.map((cut) => cut % (json.length + 1)))].sort((a, b) => a - b);
  const out: string[] = [];
  let from = 0;
  for (const cut of [...cuts, json.length]) {
    if (cut > from) out.push(json.slice(from, cut));
    from = Math.max(from, cut);
  }
  return out;
}

const tools = (value: Answer) =>
  value.blocks.filter((block): block is Extract<Block, { kind: 'tool' }> => block.kind === 'tool');
const stopOf = (value: Answer) => (tools(value).length > 0 ? 'tool' : 'stop');

function renderMessages(value: Answer): string {
  const events: Array<[string, unknown]> = [
    [
      'message_start',
      {
        type: 'message_start',
        message: {
          id: 'msg_p',
          type: 'message',
          role: 'assistant',
          content: [],
          usage: {
            input_tokens: value.usage.input - value.usage.cacheRead,
            cache_read_input_tokens: value.usage.cacheRead,
            output_tokens: 1,
          },
        },
      },
    ],
  ];
  value.blocks.forEach((block, index) => {
    const delta = (data: unknown) =>
      events.push(['content_block_delta', { type: 'content_block_delta', index, delta: data }]);
    if (block.kind === 'tool') {
      events.push([
        'content_block_start',
        {
          type: 'content_block_start',
          index,
          content_block: { type: 'tool_use', id: `toolu_${index}`, name: block.name, input: {} },
        },
      ]);
      for (const part of fragments(block)) delta({ type: 'input_json_delta', partial_json: part });
    } else if (block.kind === 'text') {
      events.push([
        'content_block_start',
        { type: 'content_block_start', index, content_block: { type: 'text', text: '' } },
      ]);
      for (const text of block.pieces) delta({ type: 'text_delta', text });
    } else {
      events.push([
        'content_block_start',
        {
          type: 'content_block_start',
          index,
          content_block: { type: 'thinking', thinking: '', signature: '' },
        },
      ]);
      for (const thinking of block.pieces) delta({ type: 'thinking_delta', thinking });
      delta({ type: 'signature_delta', signature: 'c2lnbmVk' });
    }
    events.push(['content_block_stop', { type: 'content_block_stop', index }]);
    if (index === 0) events.push(['ping', { type: 'ping' }]);
  });
  const stop = stopOf(value) === 'tool' ? 'tool_use' : 'end_turn';
  events.push([
    'message_delta',
    {
      type: 'message_delta',
      delta: { stop_reason: stop, stop_sequence: null },
      usage: { output_tokens: value.usage.output },
    },
  ]);
  events.push(['message_stop', { type: 'message_stop' }]);
  return sse(events);
}

function renderChat(value: Answer): string {
  const chunk = (delta: unknown, finish: string | null = null) => ({
    id: 'chatcmpl-p',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const events: unknown[] = [chunk({ role: 'assistant', content: '' })];
  for (const block of value.blocks) {
    if (block.kind === 'text') for (const content of block.pieces) events.push(chunk({ content }));
    if (block.kind === 'reasoning')
      for (const text of block.pieces) events.push(chunk({ reasoning_content: text }));
  }
  // Parallel calls: each call's head, then fragments of all calls interleaved as chosen.
  const calls = tools(value).map((block, index) => ({ index, queue: fragments(block), block }));
  for (const call of calls)
    events.push(
      chunk({
        tool_calls: [
          {
            index: call.index,
            id: `call_${call.index}`,
            type: 'function',
            function: { name: call.block.name, arguments: '' },
          },
        ],
      }),
    );
  let turn = 0;
  while (calls.some((call) => call.queue.length > 0)) {
    const pending = calls.filter((call) => call.queue.length > 0);
    const call = pending[(value.interleave[turn++] ?? 0) % pending.length]!;
    events.push(chunk({ tool_calls: [{ index: call.index, function: { arguments: call.queue.shift() } }] }));
  }
  events.push(chunk({}, stopOf(value) === 'tool' ? 'tool_calls' : 'stop'));
  events.push({
    id: 'chatcmpl-p',
    object: 'chat.completion.chunk',
    choices: [],
    usage: {
      prompt_tokens: value.usage.input,
      completion_tokens: value.usage.output,
      prompt_tokens_details: { cached_tokens: value.usage.cacheRead },
    },
  });
  events.push('[DONE]');
  return sse(events.map((data) => [undefined, data]));
}

function renderResponses(value: Answer): string {
  const events: Array<Record<string, unknown>> = [
    { type: 'response.created', response: { id: 'resp_p', status: 'in_progress' } },
  ];
  value.blocks.forEach((block, outputIndex) => {
    const at = { output_index: outputIndex };
    if (block.kind === 'text') {
      const item = {
        id: `msg_${outputIndex}`,
        type: 'message',
        role: 'assistant',
        status: 'in_progress',
        content: [],
      };
      events.push({ type: 'response.output_item.added', ...at, item });
      for (const delta of block.pieces)
        events.push({ type: 'response.output_text.delta', ...at, item_id: item.id, content_index: 0, delta });
      const text = block.pieces.join('');
      events.push({ type: 'response.output_text.done', ...at, item_id: item.id, content_index: 0, text });
      events.push({
        type: 'response.output_item.done',
        ...at,
        item: { ...item, status: 'completed', content: [{ type: 'output_text', text }] },
      });
    } else if (block.kind === 'reasoning') {
      const item = { id: `rs_${outputIndex}`, type: 'reasoning', summary: [] };
      events.push({ type: 'response.output_item.added', ...at, item });
      for (const delta of block.pieces)
        events.push({
          type: 'response.reasoning_summary_text.delta',
          ...at,
          item_id: item.id,
          summary_index: 0,
          delta,
        });
      events.push({
        type: 'response.output_item.done',
        ...at,
        item: {
          ...item,
          summary: [{ type: 'summary_text', text: block.pieces.join('') }],
          encrypted_content: 'ZW5j',
        },
      });
    } else {
      const item = {
        id: `fc_${outputIndex}`,
        type: 'function_call',
        call_id: `call_${outputIndex}`,
        name: block.name,
        arguments: '',
      };
      events.push({ type: 'response.output_item.added', ...at, item });
      for (const delta of fragments(block))
        events.push({ type: 'response.function_call_arguments.delta', ...at, item_id: item.id, delta });
      const json = JSON.stringify(block.args);
      events.push({
        type: 'response.function_call_arguments.done',
        ...at,
        item_id: item.id,
        arguments: json,
      });
      events.push({ type: 'response.output_item.done', ...at, item: { ...item, arguments: json } });
    }
  });
  events.push({
    type: 'response.completed',
    response: {
      id: 'resp_p',
      status: 'completed',
      usage: {
        input_tokens: value.usage.input,
        input_tokens_details: { cached_tokens: value.usage.cacheRead },
        output_tokens: value.usage.output,
      },
    },
  });
  return sse(events.map((data, index) => [data.type as string, { ...data, sequence_number: index }]));
}

/**
 * Gemini: one chunk per piece, a function call whole in one part, and every chunk carrying the
 * cumulative usageMetadata so far (thoughts counted apart from the candidates), the last one with
 * the finishReason and the final figures. A decoder that summed the chunks would be caught here.
 */
function renderGemini(value: Answer): string {
  const parts: unknown[] = [];
  for (const block of value.blocks) {
    if (block.kind === 'tool') parts.push({ functionCall: { name: block.name, args: block.args } });
    else if (block.kind === 'text') for (const text of block.pieces) parts.push({ text });
    else for (const text of block.pieces) parts.push({ text, thought: true });
  }
  const thoughts = Math.floor(value.usage.output / 3);
  const candidates = value.usage.output - thoughts;
  const usageAt = (share: number) => ({
    promptTokenCount: value.usage.input,
    cachedContentTokenCount: value.usage.cacheRead,
    candidatesTokenCount: Math.floor(candidates * share),
    thoughtsTokenCount: Math.floor(thoughts * share),
    totalTokenCount: value.usage.input + Math.floor(value.usage.output * share),
  });
  const chunks = parts.map((part, index) => ({
    candidates: [{ content: { role: 'model', parts: [part] }, index: 0 }],
    usageMetadata: usageAt(index / Math.max(1, parts.length)),
    responseId: 'gen_p',
  }));
  chunks.push({
    candidates: [{ content: { role: 'model', parts: [] }, finishReason: 'STOP', index: 0 } as never],
    usageMetadata: usageAt(1),
    responseId: 'gen_p',
  });
  return sse(chunks.map((data) => [undefined, data]));
}

const RENDER: Record<WireProtocol, (value: Answer) => string> = {
  messages: renderMessages,
  chat_completions: renderChat,
  responses: renderResponses,
  gemini: renderGemini,
};

/** Total input the caller was told, read as its protocol defines it. */
function toldInput(caller: WireProtocol, usage: Record<string, number>): number {
  if (caller === 'messages')
    return usage.input_tokens! + usage.cache_read_input_tokens! + usage.cache_creation_input_tokens!;
  return caller === 'chat_completions' ? usage.prompt_tokens! : usage.input_tokens!;
}

const PAIRS = (['messages', 'chat_completions', 'responses', 'gemini'] as const).flatMap((upstream) =>
  (['messages', 'chat_completions', 'responses'] as const)
    .filter((caller) => caller !== upstream)
    .map((caller) => [upstream, caller] as const),
);

describe('any valid upstream stream, translated', () => {
  it.each(PAIRS)('%s upstream -> %s caller: well formed, same content, exact usage', (upstream, caller) => {
    fc.assert(
      fc.property(answer, (value) => {
        const declared = tools(value).map((tool) => ({ name: tool.name, parameters: { type: 'object' } }));
        const out = translateSse(caller, upstream, RENDER[upstream](value), {
          request: requestWith({ tools: declared }),
          chunkSize: value.chunkSize,
        });
        const summary = checkStream(caller, out);
        const text = value.blocks.flatMap((block) => (block.kind === 'text' ? block.pieces : [])).join('');
        const reasoning = value.blocks
          .flatMap((block) => (block.kind === 'reasoning' ? block.pieces : []))
          .join('');
        expect(summary.text).toBe(text);
        expect(summary.reasoning).toBe(reasoning);
        expect(summary.toolCalls.map((call) => [call.name, JSON.parse(call.arguments || '{}')])).toEqual(
          tools(value).map((tool) => [tool.name, tool.args]),
        );
        const usage = summary.usage as Record<string, number>;
        expect(toldInput(caller, usage)).toBe(value.usage.input);
        expect(caller === 'chat_completions' ? usage.completion_tokens : usage.output_tokens).toBe(
          value.usage.output,
        );
      }),
      { numRuns: 150 },
    );
  });
});

describe('the well-formedness check', () => {
  it('refuses a delta before its block, a block closed twice, two terminal events and usage twice', () => {
    const start = ['message_start', { type: 'message_start', message: {} }] as [string, unknown];
    const end: Array<[string, unknown]> = [
      [
        'message_delta',
        { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 1 } },
      ],
      ['message_stop', { type: 'message_stop' }],
    ];
    const delta = [
      'content_block_delta',
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'x' } },
    ] as [string, unknown];
    const open = [
      'content_block_start',
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    ] as [string, unknown];
    const stop = ['content_block_stop', { type: 'content_block_stop', index: 0 }] as [string, unknown];
    expect(() => checkStream('messages', sse([start, open, delta, stop, ...end]))).not.toThrow();
    expect(() => checkStream('messages', sse([start, delta, open, stop, ...end]))).toThrow(/not open/);
    expect(() => checkStream('messages', sse([start, open, stop, stop, ...end]))).toThrow(/not open/);
    expect(() => checkStream('messages', sse([start, open, stop, ...end, ...end]))).toThrow();
    expect(() =>
      checkStream(
        'chat_completions',
        sse([
          [undefined, { object: 'chat.completion.chunk', choices: [{ delta: {}, finish_reason: 'stop' }] }],
          [undefined, { object: 'chat.completion.chunk', choices: [], usage: {} }],
          [undefined, { object: 'chat.completion.chunk', choices: [], usage: {} }],
          [undefined, '[DONE]'],
        ]),
      ),
    ).toThrow(/usage twice/);
  });
});
