/**
 * Golden fixtures: provider transcripts from the published API references (fixtures/README.md),
 * replayed through the translators in both directions. Each translation is kept as a golden file
 * (fixtures/translated/, reviewed like code) and turned back: what comes back must say the same.
 */
import { readFileSync } from 'node:fs';
import type { MeteredSurface } from '@tollgate/schemas';
import { describe, expect, it } from 'vitest';
import { codecFor } from './codecs.ts';
import type { IrAssistantPart, IrMessage, IrRequest, IrResponse } from './ir.ts';
import { WIRE_PROTOCOLS, type WireProtocol } from './protocol.ts';
import { providerTag } from './signatures.ts';
import { parseSse, requestWith, translateSse } from './testing/streams.ts';
import { checkStream } from './testing/well-formed.ts';
import { ToolNames } from './tool-names.ts';

const read = (path: string) => readFileSync(new URL(path, import.meta.url), 'utf8');
const golden = (name: string) => new URL(`./fixtures/translated/${name}`, import.meta.url).pathname;
const upstreamContext = { providerTag: providerTag('golden-provider') };
/** The protocols a caller speaks (Gemini's is an upstream's only). */
const others = (protocol: WireProtocol) =>
  WIRE_PROTOCOLS.filter((other): other is MeteredSurface => other !== protocol && other !== 'gemini');

function callerContext(request: IrRequest) {
  return {
    alias: 'golden-alias',
    toolNames: new ToolNames(request.tools),
    includeUsage: true,
    created: 1_700_000_000,
    request,
  };
}

/** What an answer says, independent of protocol: text, reasoning text, calls, usage totals. */
function meaning(response: IrResponse) {
  const of = <T extends IrAssistantPart['type']>(type: T) =>
    response.content.filter((part) => part.type === type) as Array<Extract<IrAssistantPart, { type: T }>>;
  return {
    text: of('text')
      .map((part) => part.text)
      .join(''),
    reasoning: of('reasoning')
      .map((part) => part.text)
      .join(''),
    calls: of('tool_call').map((part) => [part.callId, part.name, JSON.parse(part.arguments)]),
    usage: {
      input: response.usage.input,
      output: response.usage.output,
      cacheRead: response.usage.cacheRead,
    },
    stop: response.stopReason,
  };
}

const ANSWERS: Array<[string, WireProtocol]> = [
  ['../upstream/fixtures/anthropic-message-tool-use.json', 'messages'],
  ['./fixtures/anthropic-message-thinking.json', 'messages'],
  ['../upstream/fixtures/openai-chat-tool-calls.json', 'chat_completions'],
  ['../upstream/fixtures/openai-responses-function-call.json', 'responses'],
  ['../upstream/fixtures/gemini-generate-content-thinking-tool.json', 'gemini'],
];

describe('whole answers', () => {
  it.each(ANSWERS)('%s, as every other protocol and back', async (path, protocol) => {
    const original = codecFor(protocol).decodeResponse(JSON.parse(read(path)), upstreamContext);
    const request = requestWith();
    for (const caller of others(protocol)) {
      const translated = codecFor(caller).encodeResponse(original, callerContext(request));
      await expect(`${JSON.stringify(translated, null, 2)}\n`).toMatchFileSnapshot(
        golden(`${path.split('/').at(-1)}.as-${caller}.json`),
      );
      const back = codecFor(caller).decodeResponse(translated, upstreamContext);
      expect(meaning(back)).toEqual(meaning(original));
      expect(translated.model).toBe('golden-alias');
    }
  });
});

const STREAMS: Array<[string, WireProtocol]> = [
  ['../upstream/fixtures/anthropic-stream-text.sse', 'messages'],
  ['../upstream/fixtures/anthropic-stream-tool-use.sse', 'messages'],
  ['./fixtures/anthropic-stream-thinking.sse', 'messages'],
  ['../upstream/fixtures/openai-chat-stream-text.sse', 'chat_completions'],
  ['../upstream/fixtures/openai-chat-stream-tool-calls.sse', 'chat_completions'],
  ['../upstream/fixtures/openai-responses-stream-function-call.sse', 'responses'],
  ['./fixtures/openai-responses-stream-reasoning.sse', 'responses'],
  ['../upstream/fixtures/gemini-stream-thinking-tool.sse', 'gemini'],
];

describe('streams', () => {
  it.each(STREAMS)('%s, as every other protocol and back, in any chunking', async (path, protocol) => {
    const text = read(path);
    for (const caller of others(protocol)) {
      const translated = translateSse(caller, protocol, text);
      await expect(translated).toMatchFileSnapshot(golden(`${path.split('/').at(-1)}.as-${caller}.sse`));
      const there = checkStream(caller, translated);
      // The same bytes arriving one at a time translate identically, apart from generated ids.
      const bytewise = checkStream(caller, translateSse(caller, protocol, text, { chunkSize: 1 }));
      expect({
        ...bytewise,
        toolCalls: bytewise.toolCalls.map(({ name, arguments: args }) => [name, args]),
      }).toEqual({
        ...there,
        toolCalls: there.toolCalls.map(({ name, arguments: args }) => [name, args]),
      });
      // Back into the fixture's own protocol: the same text, reasoning and calls as the fixture.
      for (const final of others(caller)) {
        const back = checkStream(final, translateSse(final, caller, translated));
        expect([
          back.text,
          back.reasoning,
          back.toolCalls.map((call) => [call.name, JSON.parse(call.arguments)]),
        ]).toEqual([
          there.text,
          there.reasoning,
          there.toolCalls.map((call) => [call.name, JSON.parse(call.arguments)]),
        ]);
      }
    }
    expect(parseSse(text).length).toBeGreaterThan(2);
  });
});

/** A request's conversation, independent of protocol. */
function conversation(request: IrRequest) {
  const flat = (message: IrMessage) =>
    message.content.map((part) => {
      switch (part.type) {
        case 'text':
          return ['text', part.text];
        case 'image':
          return ['image', part.source.kind];
        case 'tool_call':
          return ['call', part.callId, part.name, JSON.parse(part.arguments)];
        case 'tool_result':
          return [
            'result',
            part.callId,
            part.content.map((item) => (item.type === 'text' ? item.text : item.type)),
          ];
        default:
          return [part.type];
      }
    });
  return {
    system: request.system.join('\n\n'),
    messages: request.messages.map((message) => [message.role, flat(message)]),
    tools: request.tools.map((tool) => [tool.name, tool.custom ? 'custom' : tool.parameters]),
  };
}

const REQUESTS: Array<[string, WireProtocol, WireProtocol[]]> = [
  ['./fixtures/anthropic-request-vision-tools.json', 'messages', ['chat_completions', 'responses', 'gemini']],
  [
    './fixtures/openai-chat-request-vision-tools.json',
    'chat_completions',
    ['messages', 'responses', 'gemini'],
  ],
];

describe('requests', () => {
  it.each(REQUESTS)('%s, encoded for each other upstream and read back', async (path, protocol, targets) => {
    const body = JSON.parse(read(path));
    const original = codecFor(protocol).decodeRequest(body, 4000);
    const toolNames = new ToolNames(original.tools);
    for (const target of targets) {
      // Stop sequences have no Responses counterpart: that pair refuses them (tested elsewhere).
      const request = target === 'responses' ? { ...original, stopSequences: undefined } : original;
      const encoded = codecFor(target).encodeRequest(request, {
        upstreamModel: 'upstream-model',
        toolNames,
        providerTag: upstreamContext.providerTag,
      });
      await expect(`${JSON.stringify(encoded, null, 2)}\n`).toMatchFileSnapshot(
        golden(`${path.split('/').at(-1)}.for-${target}.json`),
      );
      // Gemini is no caller protocol: its encoding is checked by its golden file alone.
      if (target === 'gemini') continue;
      const back = codecFor(target).decodeRequest({ ...encoded, model: 'alias' }, 4000);
      expect(conversation(back)).toEqual(conversation(request));
    }
  });

  it("maps Codex's request for a Messages upstream: instructions, tools, custom and namespaced tools, calls", async () => {
    const body = JSON.parse(read('./fixtures/openai-responses-request-codex.json'));
    const request = codecFor('responses').decodeRequest(body, 4096);
    const toolNames = new ToolNames(request.tools);
    const encoded = codecFor('messages').encodeRequest(request, {
      upstreamModel: 'claude-x',
      toolNames,
      providerTag: upstreamContext.providerTag,
    });
    await expect(`${JSON.stringify(encoded, null, 2)}\n`).toMatchFileSnapshot(
      golden('openai-responses-request-codex.json.for-messages.json'),
    );
    expect((encoded.tools as Array<{ name: string }>).map((tool) => tool.name)).toEqual([
      'exec_command',
      'apply_patch',
      'multi_agent_v1__close_agent',
    ]);
    expect(encoded.system).toEqual([
      { type: 'text', text: 'You are a coding agent running in the Codex CLI.' },
      { type: 'text', text: '<permissions instructions>sandbox: read-only</permissions instructions>' },
    ]);
    const messages = encoded.messages as Array<{ role: string; content: Array<Record<string, unknown>> }>;
    // The reasoning item was issued by another provider (unsealed): it is not sent to this one.
    expect(JSON.stringify(messages)).not.toContain('gAAAAABo-opaque');
    expect(messages[1]!.content.map((block) => block.type)).toEqual(['tool_use']);
    expect(messages[3]!.content[0]).toMatchObject({
      type: 'tool_use',
      name: 'apply_patch',
      input: { input: expect.stringContaining('*** Begin Patch') },
    });
    expect(encoded.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
  });
});
