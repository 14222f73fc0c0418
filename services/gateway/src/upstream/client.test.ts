import { createServer } from 'node:net';
import { AppError } from '@tollgate/errors';
import { afterEach, describe, expect, it } from 'vitest';
import { createUpstreamClient, ownBytes, type UpstreamClient, type UpstreamResponse } from './client.ts';
import { type FakeHandler, type FakeUpstream, startFakeUpstream } from './testing/fake-upstream.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function setup(handler: FakeHandler, timeouts: Partial<Record<'headers' | 'body', number>> = {}) {
  const upstream = await startFakeUpstream(handler);
  const client = createUpstreamClient({
    connectTimeoutMs: 1_000,
    headersTimeoutMs: timeouts.headers ?? 5_000,
    bodyTimeoutMs: timeouts.body ?? 5_000,
  });
  cleanups.push(
    () => upstream.close(),
    () => client.close(),
  );
  return { upstream, client };
}

function post(client: UpstreamClient, upstream: FakeUpstream, signal = new AbortController().signal) {
  return client.send({
    url: `${upstream.url}/v1/messages?beta=true`,
    headers: { 'content-type': 'application/json', 'x-api-key': 'sk-provider' },
    body: '{"model":"claude-x","max_tokens":5}',
    signal,
  });
}

async function readText(response: UpstreamResponse): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of response.body) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

async function expectAppError(promise: Promise<unknown>, code: string): Promise<AppError> {
  const error = await promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(AppError);
  expect((error as AppError).code).toBe(code);
  // Nothing about where the provider lives reaches the message a client could see.
  expect((error as AppError).message).not.toMatch(/127\.0\.0\.1|localhost|:\d{2,5}/);
  return error as AppError;
}

describe('upstream client', () => {
  it('posts the body and headers as given and returns status, headers and body', async () => {
    const { upstream, client } = await setup((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'x-provider-thing': 'p' });
      response.end('{"ok":true}');
    });
    const response = await post(client, upstream);
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/json');
    expect(await readText(response)).toBe('{"ok":true}');
    expect(upstream.requests).toEqual([
      expect.objectContaining({
        method: 'POST',
        url: '/v1/messages?beta=true',
        body: '{"model":"claude-x","max_tokens":5}',
        headers: expect.objectContaining({ 'x-api-key': 'sk-provider', 'content-type': 'application/json' }),
      }),
    ]);
  });

  it('reuses keep-alive connections instead of opening one per request', async () => {
    const { upstream, client } = await setup((_request, response) => {
      response.end('{}');
    });
    for (let index = 0; index < 10; index++) await readText(await post(client, upstream));
    expect(upstream.requests).toHaveLength(10);
    // undici may open a second socket while the first is finishing a response; never ten.
    expect(upstream.connections()).toBeLessThanOrEqual(2);
  });

  it('resolves 4xx and 5xx answers instead of throwing, so the relay can classify them', async () => {
    const statuses = [400, 429, 500, 529];
    const { upstream, client } = await setup((_request, response) => {
      response.writeHead(statuses[upstream.requests.length - 1]!).end('{"type":"error"}');
    });
    const seen: number[] = [];
    for (let index = 0; index < statuses.length; index++) {
      const response = await post(client, upstream);
      await readText(response);
      seen.push(response.status);
    }
    expect(seen).toEqual(statuses);
  });

  it('reports a refused connection as upstream_unavailable', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise((resolve) => probe.close(resolve));
    const client = createUpstreamClient({ connectTimeoutMs: 500, headersTimeoutMs: 500, bodyTimeoutMs: 500 });
    cleanups.push(() => client.close());
    const error = await expectAppError(
      client.send({
        url: `http://127.0.0.1:${port}/v1/messages`,
        headers: {},
        body: '{}',
        signal: new AbortController().signal,
      }),
      'upstream_unavailable',
    );
    expect(error.status).toBe(503);
  });

  it('reports a connection reset before the answer as upstream_unavailable', async () => {
    const { upstream, client } = await setup((_request, _response, socket) => {
      socket.destroy();
    });
    await expectAppError(post(client, upstream), 'upstream_unavailable');
  });

  // undici checks header and body timeouts on a coarse clock (about half a second per tick), so
  // these tests give the provider a silence well beyond the timeout plus one tick.
  it('reports slow response headers as upstream_unavailable', async () => {
    const { upstream, client } = await setup(
      async (_request, response) => {
        // A provider silent past the headers timeout (real time is what is tested).
        await new Promise((resolve) => setTimeout(resolve, 4_000));
        if (!response.destroyed) response.end('{}');
      },
      { headers: 150 },
    );
    const started = Date.now();
    const error = await expectAppError(post(client, upstream), 'upstream_unavailable');
    expect(Date.now() - started).toBeLessThan(3_000);
    expect((error.cause as { code?: string }).code).toBe('UND_ERR_HEADERS_TIMEOUT');
  });

  it('fails the body read when the provider goes silent longer than the body timeout', async () => {
    const { upstream, client } = await setup(
      (_request, response) => {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write('event: ping\ndata: {}\n\n');
      },
      { body: 150 },
    );
    const response = await post(client, upstream);
    const started = Date.now();
    await expect(readText(response)).rejects.toMatchObject({ code: 'UND_ERR_BODY_TIMEOUT' });
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('reports an aborted request as client_disconnected', async () => {
    let arrived!: () => void;
    const arriving = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const { upstream, client } = await setup(() => {
      // Never answers: the client gives up first.
      arrived();
    });
    const controller = new AbortController();
    const sending = post(client, upstream, controller.signal);
    await arriving; // the call is in flight at the provider
    controller.abort();
    await expectAppError(sending, 'client_disconnected');
  });

  it('keeps the body sent upstream in memory of its own size, not in a shared 64 KiB pool block', () => {
    const text = '{"prompt":"héllo"}';
    const bytes = ownBytes(text);
    expect(bytes.toString('utf8')).toBe(text);
    // A stream keeps these bytes for its whole life: a pool slice would keep the whole block.
    expect(bytes.buffer.byteLength).toBe(Buffer.byteLength(text));
  });
});
