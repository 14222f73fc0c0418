import { describe, expect, it } from 'vitest';
import { anthropicAdapter, openaiAdapter } from './adapters/index.ts';
import { readFixture } from './fixtures/read-fixture.ts';
import { relayStream } from './relay-stream.ts';
import { SseParser } from './sse.ts';
import { memoryResponse, piecesOf, readAll, SSE_HEADERS } from './testing/responses.ts';
import { type MeteredSurface, plainUsage, type UpstreamAdapter, type UsageFigures } from './types.ts';

interface StreamCase {
  surface: MeteredSurface;
  adapter: UpstreamAdapter;
  fixture: string;
  upstream: string;
  usage: UsageFigures;
}

const CASES: StreamCase[] = [
  {
    surface: 'messages',
    adapter: anthropicAdapter,
    fixture: 'anthropic-stream-tool-use.sse',
    upstream: 'claude-sonnet-4-5-20250929',
    usage: { ...plainUsage(472n, 89n), cacheWriteTokens: 100n, cacheReadTokens: 2048n },
  },
  {
    surface: 'chat_completions',
    adapter: openaiAdapter,
    fixture: 'openai-chat-stream-tool-calls.sse',
    upstream: 'gpt-4o-mini',
    usage: plainUsage(68n, 16n),
  },
  {
    surface: 'responses',
    adapter: openaiAdapter,
    fixture: 'openai-responses-stream-function-call.sse',
    upstream: 'gpt-4.1',
    usage: plainUsage(312n, 41n),
  },
];

function start(
  streamCase: Pick<StreamCase, 'surface' | 'adapter' | 'upstream'>,
  chunks: string[],
  options: { ending?: Error; clientAskedForUsage?: boolean } = {},
) {
  let aborts = 0;
  const relayed = relayStream({
    response: memoryResponse(200, SSE_HEADERS, chunks, options.ending ?? null),
    surface: streamCase.surface,
    adapter: streamCase.adapter,
    alias: 'house-model',
    upstreamModel: streamCase.upstream,
    clientAskedForUsage: options.clientAskedForUsage ?? true,
    abortUpstream: () => {
      aborts++;
    },
  });
  return { ...relayed, aborts: () => aborts };
}

/** The events a client's SSE reader would see. */
function eventsOf(text: string) {
  const parser = new SseParser();
  return [...parser.push(text), ...parser.flush()];
}

describe('relayStream: complete streams', () => {
  for (const streamCase of CASES) {
    it(`relays a ${streamCase.surface} stream with tool calls event by event and settles its usage`, async () => {
      const text = readFixture(streamCase.fixture);
      const relayed = start(streamCase, piecesOf(text, 37));
      const output = await readAll(relayed.body);
      // Every provider event, in order and byte for byte, except the upstream model id.
      expect(output).not.toContain(streamCase.upstream);
      expect(output).toBe(
        text.replace(new RegExp(`"model":"${streamCase.upstream}[^"]*"`, 'g'), '"model":"house-model"'),
      );
      expect(await relayed.outcome).toEqual({ kind: 'completed', usage: streamCase.usage });
      expect(relayed.headers).toEqual({
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
      });
    });
  }

  it('drops the chat usage chunk the client did not ask for, keeps [DONE], and still settles', async () => {
    const chat = CASES[1]!;
    const relayed = start(chat, [readFixture('openai-chat-stream-text.sse')], { clientAskedForUsage: false });
    const events = eventsOf(await readAll(relayed.body));
    expect(events.map((event) => event.data).at(-1)).toBe('[DONE]');
    expect(events).toHaveLength(5);
    expect(events.some((event) => event.data.includes('"prompt_tokens"'))).toBe(false);
    expect(await relayed.outcome).toEqual({
      kind: 'completed',
      usage: plainUsage(9n, 12n),
    });
  });

  it('keeps the chat usage chunk when the client asked for it', async () => {
    const relayed = start(CASES[1]!, [readFixture('openai-chat-stream-text.sse')], {
      clientAskedForUsage: true,
    });
    const events = eventsOf(await readAll(relayed.body));
    expect(events).toHaveLength(6);
    expect(events[4]?.data).toContain('"usage":{"prompt_tokens":9');
  });

  it('holds a stream that ended cleanly without usage, and the client still gets the whole answer', async () => {
    const withoutUsage = readFixture('openai-chat-stream-text.sse').replace(
      /data: [^\n]*"choices":\[\],[^\n]*\n\n/,
      '',
    );
    const relayed = start(CASES[1]!, [withoutUsage]);
    const output = await readAll(relayed.body);
    expect(output.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(output).not.toContain('error');
    expect(await relayed.outcome).toEqual({ kind: 'no_usage' });
  });

  it('counts a cut after the end event as complete', async () => {
    const relayed = start(CASES[0]!, [readFixture('anthropic-stream-text.sse')], {
      ending: new Error('socket hang up'),
    });
    const output = await readAll(relayed.body);
    expect(output).not.toContain('event: error');
    expect(await relayed.outcome).toEqual({
      kind: 'completed',
      usage: plainUsage(25n, 15n),
    });
  });
});

describe('relayStream: failures mid-stream', () => {
  function cutAfter(text: string, events: number): string {
    return `${text.split('\n\n').slice(0, events).join('\n\n')}\n\n`;
  }

  it('ends a messages stream cut by the provider with a messages-style error event', async () => {
    const head = cutAfter(readFixture('anthropic-stream-tool-use.sse'), 5);
    const relayed = start(CASES[0]!, [head], { ending: new Error('other side closed') });
    const output = await readAll(relayed.body);
    expect(output.startsWith(head.replace('claude-sonnet-4-5-20250929', 'house-model'))).toBe(true);
    const last = eventsOf(output).at(-1)!;
    expect(last.event).toBe('error');
    expect(JSON.parse(last.data)).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: expect.any(String), service_code: 'upstream_unavailable' },
    });
    expect(await relayed.outcome).toMatchObject({
      kind: 'upstream_failed',
      error: { code: 'upstream_unavailable' },
    });
  });

  it('replaces a provider error event with ours, never relaying the provider text', async () => {
    const head = cutAfter(readFixture('anthropic-stream-text.sse'), 4);
    const providerError =
      'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Anthropic is overloaded"}}\n\n';
    const relayed = start(CASES[0]!, [
      head + providerError,
      'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    ]);
    const output = await readAll(relayed.body);
    expect(output).not.toContain('Anthropic');
    expect(output).not.toContain('message_stop');
    expect(JSON.parse(eventsOf(output).at(-1)!.data).error.service_code).toBe('upstream_unavailable');
    expect((await relayed.outcome).kind).toBe('upstream_failed');
  });

  it('ends a chat stream with an openai-style error chunk on an invalid event', async () => {
    const head = cutAfter(readFixture('openai-chat-stream-text.sse'), 2);
    const relayed = start(CASES[1]!, [head, 'data: {"id":"chatcmpl-123","object":"chat.comp\n\n']);
    const events = eventsOf(await readAll(relayed.body));
    expect(events).toHaveLength(3);
    expect(events[2]!.event).toBeUndefined();
    expect(JSON.parse(events[2]!.data)).toEqual({
      error: { message: expect.any(String), type: 'api_error', code: 'upstream_invalid_response' },
    });
    expect(await relayed.outcome).toMatchObject({
      kind: 'upstream_failed',
      error: { code: 'upstream_invalid_response', status: 502 },
    });
  });

  it('ends a responses stream with an error event that continues the sequence numbers', async () => {
    const head = cutAfter(readFixture('openai-responses-stream-function-call.sse'), 6);
    const providerError =
      'event: response.failed\ndata: {"type":"response.failed","sequence_number":6,"response":{"status":"failed","error":{"code":"server_error","message":"The model gpt-4.1 failed"}}}\n\n';
    const relayed = start(CASES[2]!, [head, providerError]);
    const output = await readAll(relayed.body);
    expect(output).not.toContain('gpt-4.1');
    const last = eventsOf(output).at(-1)!;
    expect(last.event).toBe('error');
    expect(JSON.parse(last.data)).toEqual({
      type: 'error',
      code: 'upstream_unavailable',
      message: expect.any(String),
      param: null,
      sequence_number: 6,
    });
  });

  it('fails a stream that stops without its end event', async () => {
    for (const streamCase of CASES) {
      const head = cutAfter(readFixture(streamCase.fixture), 3);
      const relayed = start(streamCase, [head]);
      const events = eventsOf(await readAll(relayed.body));
      expect(events).toHaveLength(4);
      expect(events.at(-1)!.data).toContain('upstream_invalid_response');
      expect(await relayed.outcome).toMatchObject({ kind: 'upstream_failed' });
    }
  });
});

describe('relayStream: the client leaving', () => {
  it('aborts the upstream request when the client leaves before the provider produced anything', async () => {
    let aborts = 0;
    async function* silent(): AsyncGenerator<Buffer> {
      await new Promise(() => {}); // headers came, no event yet
    }
    const relayed = relayStream({
      response: { status: 200, headers: SSE_HEADERS, body: silent() },
      surface: 'messages',
      adapter: anthropicAdapter,
      alias: 'house-model',
      upstreamModel: 'claude-sonnet-4-5-20250929',
      clientAskedForUsage: true,
      abortUpstream: () => {
        aborts++;
      },
    });
    await relayed.body.cancel();
    expect(await relayed.outcome).toEqual({ kind: 'client_disconnected', started: false, usage: null });
    expect(aborts).toBe(1);
  });

  it('reads the upstream to its end for the usage when the client leaves after output started', async () => {
    for (const streamCase of CASES) {
      const relayed = start(streamCase, piecesOf(readFixture(streamCase.fixture), 200));
      const reader = relayed.body.getReader();
      const first = await reader.read();
      expect(first.done).toBe(false);
      await reader.cancel();
      expect(await relayed.outcome).toEqual({
        kind: 'client_disconnected',
        started: true,
        usage: streamCase.usage,
      });
      expect(relayed.aborts()).toBe(0);
    }
  });

  it('stops reading for usage after the drain deadline when the provider trickles on', async () => {
    const events = readFixture('anthropic-stream-text.sse').split(/(?<=\n\n)/);
    let aborts = 0;
    async function* trickle(): AsyncGenerator<Buffer> {
      yield Buffer.from(events[0]!);
      for (;;) {
        // Real time: a provider that trickles pings past the drain deadline.
        await new Promise((resolve) => setTimeout(resolve, 20));
        yield Buffer.from('event: ping\ndata: {"type": "ping"}\n\n');
      }
    }
    const relayed = relayStream({
      response: { status: 200, headers: SSE_HEADERS, body: trickle() },
      surface: 'messages',
      adapter: anthropicAdapter,
      alias: 'house-model',
      upstreamModel: 'claude-sonnet-4-5-20250929',
      clientAskedForUsage: true,
      abortUpstream: () => {
        aborts++;
      },
      drainTimeoutMs: 200,
    });
    const reader = relayed.body.getReader();
    await reader.read();
    const started = performance.now();
    await reader.cancel();
    expect(await relayed.outcome).toMatchObject({ kind: 'client_disconnected', started: true });
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(aborts).toBe(1);
  });

  it('reports no usage for a client that left after output when the upstream then stops short', async () => {
    const head = readFixture('anthropic-stream-tool-use.sse')
      .split(/(?<=\n\n)/)
      .slice(0, 3)
      .join('');
    const relayed = start(CASES[0]!, piecesOf(head, 100));
    const reader = relayed.body.getReader();
    await reader.read();
    await reader.cancel();
    expect(await relayed.outcome).toEqual({ kind: 'client_disconnected', started: true, usage: null });
    expect(relayed.aborts()).toBe(0);
  });

  it('settles a client that hangs up right after [DONE], before the upstream body ended', async () => {
    const text = readFixture('openai-chat-stream-text.sse');
    let aborts = 0;
    async function* endlessAfterDone(): AsyncGenerator<Buffer> {
      yield Buffer.from(text);
      await new Promise(() => {}); // the upstream never closes its body
    }
    const relayed = relayStream({
      response: { status: 200, headers: SSE_HEADERS, body: endlessAfterDone() },
      surface: 'chat_completions',
      adapter: openaiAdapter,
      alias: 'house-model',
      upstreamModel: 'gpt-4o-mini',
      clientAskedForUsage: false,
      abortUpstream: () => {
        aborts++;
      },
    });
    const reader = relayed.body.getReader();
    const { value } = await reader.read();
    expect(new TextDecoder().decode(value).endsWith('data: [DONE]\n\n')).toBe(true);
    await reader.cancel();
    expect(await relayed.outcome).toEqual({
      kind: 'completed',
      usage: plainUsage(9n, 12n),
    });
    expect(aborts).toBe(0);
  });

  it('does not abort or change the outcome when the client leaves after the end', async () => {
    const relayed = start(CASES[1]!, [readFixture('openai-chat-stream-text.sse')]);
    await readAll(relayed.body);
    await relayed.body.cancel().catch(() => {});
    expect((await relayed.outcome).kind).toBe('completed');
    expect(relayed.aborts()).toBe(0);
  });
});
