import { once } from 'node:events';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { createAdaptorServer, type HttpBindings } from '@hono/node-server';
import { isAppError, renderOpenAIError } from '@tollgate/errors';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBodyWithLimit } from './read-body.ts';

const LIMIT = 64 * 1024;
// Node reads the socket in chunks of up to 64 KiB and keeps one highWaterMark per stream; anything
// well under a megabyte past the limit means the server stopped reading early.
const READ_SLACK = 512 * 1024;

interface Observation {
  handlerCalls: number;
  socketBytesAtDecision: number[];
  /** Length of every body the handler accepted. */
  acceptedLengths: number[];
}

const seen: Observation = { handlerCalls: 0, socketBytesAtDecision: [], acceptedLengths: [] };

function createApp() {
  const app = new Hono<{ Bindings: HttpBindings }>();
  app.post('/upload', async (c) => {
    seen.handlerCalls += 1;
    try {
      const body = await readBodyWithLimit(c.req.raw.body, LIMIT, c.req.header('content-length'));
      seen.socketBytesAtDecision.push(c.env.incoming.socket.bytesRead);
      seen.acceptedLengths.push(body.length);
      return c.json({ bytes: body.length });
    } catch (error) {
      seen.socketBytesAtDecision.push(c.env.incoming.socket.bytesRead);
      if (!isAppError(error)) throw error;
      const rendered = renderOpenAIError(error);
      return c.json(rendered.body, rendered.status as 413);
    }
  });
  return app;
}

let server: ReturnType<typeof createAdaptorServer>;
let port: number;

beforeAll(async () => {
  server = createAdaptorServer({ fetch: createApp().fetch });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.close();
  (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
});

async function readJson(response: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

/** Writes `total` bytes in `piece`-sized writes until the server answers; returns bytes written. */
async function uploadUntilAnswered(headers: Record<string, string>, total: number, piece: number) {
  const request = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/upload', headers });
  request.on('error', () => {}); // the server may close the socket once it has answered
  const answered = once(request, 'response') as Promise<[IncomingMessage]>;
  let response: IncomingMessage | undefined;
  answered.then(([r]) => {
    response = r;
  });
  const chunk = Buffer.alloc(piece, 0x61);
  let written = 0;
  while (written < total && response === undefined) {
    const flushed = request.write(chunk);
    written += piece;
    if (!flushed) await Promise.race([once(request, 'drain'), answered]);
  }
  const [finalResponse] = await answered;
  const body = await readJson(finalResponse);
  request.destroy();
  return { status: finalResponse.statusCode, body, written };
}

/** Sends raw bytes on a fresh connection and returns everything the server wrote before closing. */
async function exchangeRaw(parts: Array<string | Buffer>): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  const replies: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => replies.push(chunk));
  socket.on('error', () => {}); // a reset after the reply is expected once the server gives up
  // Not events.once: it rejects on the reset that follows the server's reply.
  const closed = new Promise((resolve) => socket.on('close', resolve));
  for (const part of parts) socket.write(part);
  await closed;
  return Buffer.concat(replies).toString('latin1');
}

describe('readBodyWithLimit behind @hono/node-server', () => {
  it('refuses a chunked upload well over the limit and stops reading early', async () => {
    seen.socketBytesAtDecision.length = 0;
    const total = 16 * 1024 * 1024;
    const result = await uploadUntilAnswered(
      { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      total,
      16 * 1024,
    );
    expect(result.status).toBe(413);
    expect(result.body).toMatchObject({ error: { code: 'request_too_large' } });
    expect(JSON.stringify(result.body)).toContain(`${LIMIT} bytes`);
    const readAtDecision = seen.socketBytesAtDecision[0]!;
    expect(readAtDecision).toBeGreaterThan(LIMIT);
    expect(readAtDecision).toBeLessThan(LIMIT + READ_SLACK);
  });

  it('refuses a large declared Content-Length before any of the body is sent', async () => {
    seen.socketBytesAtDecision.length = 0;
    const request = httpRequest({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/upload',
      headers: { 'content-type': 'application/json', 'content-length': String(10 * 1024 * 1024) },
    });
    request.on('error', () => {});
    request.flushHeaders();
    const [response] = (await once(request, 'response')) as [IncomingMessage];
    expect(response.statusCode).toBe(413);
    expect(await readJson(response)).toMatchObject({ error: { code: 'request_too_large' } });
    // Only the request head crossed the wire.
    expect(seen.socketBytesAtDecision[0]).toBeLessThan(1024);
    request.destroy();
  });

  it('never hands the handler more than a small declared Content-Length', async () => {
    seen.acceptedLengths.length = 0;
    const head =
      'POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n';
    const text = await exchangeRaw([head, Buffer.alloc(1024 * 1024, 0x61)]);
    // Node's parser ends the body after the declared 100 bytes and treats the rest as a malformed
    // next request (400, connection closed). The handler got exactly the declared 100 bytes.
    expect(text).toMatch(/^HTTP\/1\.1 (200|400)/);
    expect(text).not.toContain('"bytes":1048');
    expect(seen.acceptedLengths).toEqual([100]);
  });

  it('rejects Content-Length together with chunked encoding before the handler runs', async () => {
    const callsBefore = seen.handlerCalls;
    const chunkBody = Buffer.alloc(200 * 1024, 0x61);
    const text = await exchangeRaw([
      'POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n',
      `${chunkBody.length.toString(16)}\r\n`,
      chunkBody,
      '\r\n0\r\n\r\n',
    ]);
    expect(text).toMatch(/^HTTP\/1\.1 400/);
    expect(seen.handlerCalls).toBe(callsBefore);
  });
});
