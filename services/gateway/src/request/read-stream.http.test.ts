import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isAppError } from '@tollgate/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readStreamWithLimit } from './read-body.ts';

const LIMIT = 64 * 1024;
// Node reads the socket in chunks of up to 64 KiB; well under a megabyte past the limit means
// the server stopped reading early.
const READ_SLACK = 512 * 1024;

const decisions: Array<{ code: string; bytesRead: number; length?: number }> = [];
let server: Server;
let port: number;

beforeAll(async () => {
  server = createServer((request, response) => {
    readStreamWithLimit(request, LIMIT, request.headers['content-length']).then(
      (body) => {
        decisions.push({ code: 'ok', bytesRead: request.socket.bytesRead, length: body.length });
        response.end(JSON.stringify({ bytes: body.length }));
      },
      (error: unknown) => {
        decisions.push({
          code: isAppError(error) ? error.code : 'other',
          bytesRead: request.socket.bytesRead,
        });
        if (!response.destroyed) {
          response.writeHead(413, { connection: 'close' });
          response.end();
        }
      },
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});

afterAll(() => {
  server.closeAllConnections();
  server.close();
});

function post(headers: Record<string, string>) {
  const request = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/', headers });
  request.on('error', () => {}); // the server closes the socket once it has answered
  return request;
}

describe('readStreamWithLimit on a Node request', () => {
  it('refuses a chunked upload well over the limit and stops reading early', async () => {
    decisions.length = 0;
    const request = post({ 'transfer-encoding': 'chunked' });
    const answered = once(request, 'response') as Promise<[IncomingMessage]>;
    let done = false;
    answered.then(() => {
      done = true;
    });
    const chunk = Buffer.alloc(16 * 1024, 0x61);
    for (let written = 0; written < 16 * 1024 * 1024 && !done; written += chunk.length) {
      if (!request.write(chunk)) await Promise.race([once(request, 'drain'), answered]);
    }
    const [response] = await answered;
    expect(response.statusCode).toBe(413);
    request.destroy();
    expect(decisions[0]!.code).toBe('request_too_large');
    expect(decisions[0]!.bytesRead).toBeGreaterThan(LIMIT);
    expect(decisions[0]!.bytesRead).toBeLessThan(LIMIT + READ_SLACK);
  });

  it('refuses a declared Content-Length over the limit before reading the body', async () => {
    decisions.length = 0;
    const request = post({ 'content-length': String(10 * 1024 * 1024) });
    request.flushHeaders();
    const [response] = (await once(request, 'response')) as [IncomingMessage];
    expect(response.statusCode).toBe(413);
    request.destroy();
    expect(decisions[0]).toMatchObject({ code: 'request_too_large' });
    expect(decisions[0]!.bytesRead).toBeLessThan(1024);
  });

  it('accepts a body of exactly the limit, chunked', async () => {
    decisions.length = 0;
    const request = post({ 'transfer-encoding': 'chunked' });
    request.write(Buffer.alloc(LIMIT - 1000, 0x61));
    request.end(Buffer.alloc(1000, 0x62));
    const [response] = (await once(request, 'response')) as [IncomingMessage];
    expect(response.statusCode).toBe(200);
    expect(decisions[0]).toMatchObject({ code: 'ok', length: LIMIT });
  });

  it('reports a client that leaves mid-body as client_disconnected', async () => {
    decisions.length = 0;
    // Resolves after the server's own handler, which starts reading the body.
    const reading = once(server, 'request');
    const request = post({ 'content-length': '50000' });
    request.write(Buffer.alloc(1000, 0x61));
    await reading;
    request.destroy();
    await expect.poll(() => decisions[0]?.code).toBe('client_disconnected');
  });
});
