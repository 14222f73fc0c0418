import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { anthropicAdapter, openaiAdapter } from './adapters/index.ts';
import { createUpstreamClient } from './client.ts';
import { readFixture } from './fixtures/read-fixture.ts';
import { relayStream } from './relay-stream.ts';
import { type FakeHandler, startFakeUpstream } from './testing/fake-upstream.ts';
import { readAll } from './testing/responses.ts';
import type { MeteredSurface, UpstreamAdapter } from './types.ts';
import { plainUsage } from './types.ts';
import { checkUpstreamResponse } from './upstream-status.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

function sseHead(response: ServerResponse): void {
  response.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'x-provider-region': 'us-east',
  });
}

/** A real upstream on 127.0.0.1, the real client, and the relay, as a route would wire them. */
async function streamThrough(
  handler: FakeHandler,
  surface: MeteredSurface = 'messages',
  adapter: UpstreamAdapter = anthropicAdapter,
  bodyTimeoutMs = 5_000,
  options: { passSignal?: boolean } = {},
) {
  const upstream = await startFakeUpstream(handler);
  const client = createUpstreamClient({ connectTimeoutMs: 1_000, headersTimeoutMs: 5_000, bodyTimeoutMs });
  cleanups.push(
    () => upstream.close(),
    () => client.close(),
  );
  const controller = new AbortController();
  const response = await client.send({
    url: `${upstream.url}/v1/x`,
    headers: {},
    body: '{}',
    signal: controller.signal,
  });
  const names = { alias: 'house-model', upstreamModel: 'claude-sonnet-4-5-20250929' };
  const checked = await checkUpstreamResponse({ response, names, surface, stream: true });
  if (!checked.ok) throw checked.error;
  const relayed = relayStream({
    response,
    surface,
    adapter,
    ...names,
    clientAskedForUsage: false,
    abortUpstream: () => controller.abort(),
    ...(options.passSignal ? { signal: controller.signal } : {}),
  });
  return {
    upstream,
    relayed,
    signal: controller.signal,
    abort: (reason?: Error) => controller.abort(reason),
  };
}

const TEXT_STREAM = readFixture('anthropic-stream-text.sse');
const [FIRST_EVENT, ...REST] = TEXT_STREAM.split(/(?<=\n\n)/);

describe('relayStream over a real connection', () => {
  it('passes the first event on before the provider has sent the rest', async () => {
    let sendRest: () => void = () => {};
    const { relayed } = await streamThrough((_request, response) => {
      sseHead(response);
      response.write(FIRST_EVENT);
      sendRest = () => response.end(REST.join(''));
    });
    const reader = relayed.body.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toBe(FIRST_EVENT!.replace('claude-sonnet-4-5-20250929', 'house-model'));
    sendRest();
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      rest += new TextDecoder().decode(chunk.value);
    }
    expect(rest).toBe(REST.join(''));
    expect(await relayed.outcome).toEqual({
      kind: 'completed',
      usage: plainUsage(25n, 15n),
    });
  });

  it('ends with an error event when the provider drops the connection mid-stream', async () => {
    const { relayed } = await streamThrough((_request, response, socket) => {
      sseHead(response);
      response.write(FIRST_EVENT! + REST[0]);
      setTimeout(() => socket.destroy(), 30); // after the first events have left, mid-stream
    });
    const output = await readAll(relayed.body);
    expect(output.startsWith('event: message_start')).toBe(true);
    expect(output.endsWith('\n\n')).toBe(true);
    expect(output).toMatch(
      /event: error\ndata: \{"type":"error","error":\{[^\n]*"service_code":"upstream_unavailable"\}\}\n\n$/,
    );
    expect(await relayed.outcome).toMatchObject({
      kind: 'upstream_failed',
      error: { code: 'upstream_unavailable' },
    });
  });

  it('ends with an error event when the provider goes silent past the body timeout', async () => {
    const { relayed } = await streamThrough(
      (_request, response) => {
        sseHead(response);
        response.write('data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":null}\n\n');
      },
      'chat_completions',
      openaiAdapter,
      150,
    );
    const started = Date.now();
    const output = await readAll(relayed.body);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(output.split('\n\n').at(-2)).toMatch(/^data: \{"error":\{.*"code":"upstream_unavailable"\}\}$/);
    expect((await relayed.outcome).kind).toBe('upstream_failed');
  });

  it('aborts the upstream request when the client cancels before any event', async () => {
    let upstreamClosed: () => void = () => {};
    const closed = new Promise<void>((resolve) => {
      upstreamClosed = resolve;
    });
    const { relayed, signal } = await streamThrough((_request, response) => {
      sseHead(response);
      response.flushHeaders();
      response.on('close', () => upstreamClosed());
    });
    await relayed.body.cancel();
    expect(signal.aborted).toBe(true);
    expect(await relayed.outcome).toEqual({ kind: 'client_disconnected', started: false, usage: null });
    await closed; // the provider saw the connection close, so it stops generating
  });

  it('keeps reading after a client that left mid-stream and reports the usage the provider sent', async () => {
    let sendRest: () => void = () => {};
    const { relayed, signal } = await streamThrough((_request, response) => {
      sseHead(response);
      response.write(FIRST_EVENT);
      sendRest = () => response.end(REST.join(''));
    });
    const reader = relayed.body.getReader();
    await reader.read();
    await reader.cancel();
    sendRest();
    const outcome = await relayed.outcome;
    expect(outcome).toMatchObject({ kind: 'client_disconnected', started: true });
    expect((outcome as { usage: unknown }).usage).not.toBeNull();
    expect(signal.aborted).toBe(false);
  });

  it("reports client_disconnected when the client's own signal aborted the upstream first", async () => {
    for (const passSignal of [false, true]) {
      const { relayed, abort, signal } = await streamThrough(
        (_request, response) => {
          sseHead(response);
          response.write(FIRST_EVENT);
        },
        'messages',
        anthropicAdapter,
        5_000,
        { passSignal },
      );
      const reader = relayed.body.getReader();
      await reader.read();
      const pending = reader.read();
      abort(passSignal ? new Error('aborted') : undefined);
      expect((await pending).done).toBe(true);
      expect(signal.aborted).toBe(true);
      expect(await relayed.outcome).toMatchObject({ kind: 'client_disconnected', started: true });
    }
  });

  it('refuses a 200 answer to a streaming call that is not an event stream', async () => {
    const upstream = await startFakeUpstream((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"x"}');
    });
    const client = createUpstreamClient({
      connectTimeoutMs: 1_000,
      headersTimeoutMs: 2_000,
      bodyTimeoutMs: 2_000,
    });
    cleanups.push(
      () => upstream.close(),
      () => client.close(),
    );
    const response = await client.send({
      url: upstream.url,
      headers: {},
      body: '{}',
      signal: new AbortController().signal,
    });
    const checked = await checkUpstreamResponse({
      response,
      names: { alias: 'a', upstreamModel: 'm' },
      surface: 'messages',
      stream: true,
    });
    expect(checked).toMatchObject({
      ok: false,
      settle: 'release',
      error: { code: 'upstream_invalid_response' },
    });
  });
});
