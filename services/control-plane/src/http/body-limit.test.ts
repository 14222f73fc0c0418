import { request as httpRequest } from 'node:http';
import { createAdaptorServer } from '@hono/node-server';
import { type Listening, listen } from '@tollgate/service-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../../test/context.ts';

const LIMIT = 4096;
const LARGE_LIMIT = 200_000;
let context: TestContext;
let served: Listening;

beforeAll(async () => {
  context = await createTestContext('body-limit', {
    CONTROL_PLANE_BODY_LIMIT_BYTES: String(LIMIT),
    CONTROL_PLANE_LARGE_BODY_LIMIT_BYTES: String(LARGE_LIMIT),
  });
  served = await listen(createAdaptorServer({ fetch: context.publicApp.fetch }) as never, 0, '127.0.0.1');
}, 60_000);
afterAll(async () => {
  await served?.close(100);
  await context?.close();
});

function loginBody(padding: number): string {
  return JSON.stringify({ email: 'someone@example.test', password: 'x'.repeat(padding) });
}

interface StreamedAnswer {
  status: number;
  connection: string | undefined;
  body: { code?: string; message?: string };
  bytesSent: number;
}

/**
 * Sends up to `totalBytes` to the login route over a real socket, chunked (no Content-Length)
 * or with one declared, and reports how much had been written when the answer arrived.
 */
function streamLogin(totalBytes: number, declareLength: boolean): Promise<StreamedAnswer> {
  return new Promise((resolve, reject) => {
    let bytesSent = 0;
    let answered = false;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (declareLength) headers['content-length'] = String(totalBytes);
    const request = httpRequest(
      `${served.url}/api/v1/auth/login`,
      { method: 'POST', headers },
      (response) => {
        answered = true;
        let text = '';
        response.on('data', (chunk) => {
          text += chunk;
        });
        response.on('end', () => {
          request.destroy();
          resolve({
            status: response.statusCode ?? 0,
            connection: response.headers.connection,
            body: JSON.parse(text),
            bytesSent,
          });
        });
      },
    );
    request.on('error', (error) => {
      if (!answered) reject(error);
    });
    const chunk = Buffer.alloc(64 * 1024, 'a');
    const pump = () => {
      while (!answered && bytesSent < totalBytes) {
        bytesSent += chunk.length;
        if (!request.write(chunk)) {
          request.once('drain', pump);
          return;
        }
      }
      if (!answered) request.end();
    };
    request.write('{"email":"a@example.test","password":"');
    pump();
  });
}

describe('control-plane body limit', () => {
  it('accepts a body within the limit (the route answers, not the limit)', async () => {
    const response = await context.publicApp.request('/api/v1/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: loginBody(100),
    });
    expect(response.status).toBe(401);
  });

  it('refuses a declared Content-Length over the limit with 413 request_too_large', async () => {
    const response = await context.publicApp.request('/api/v1/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: loginBody(LIMIT),
    });
    expect(response.status).toBe(413);
    const body = await response.json();
    expect(body).toEqual({ code: 'request_too_large', message: expect.stringContaining(String(LIMIT)) });
  });

  it('refuses an undeclared (streamed) body over the limit', async () => {
    const payload = new TextEncoder().encode(loginBody(LIMIT * 2));
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let offset = 0; offset < payload.length; offset += 1000) {
          controller.enqueue(payload.subarray(offset, offset + 1000));
        }
        controller.close();
      },
    });
    const response = await context.publicApp.request('/api/v1/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(413);
    expect(((await response.json()) as { code: string }).code).toBe('request_too_large');
  });

  it('answers a 300 MB chunked login body with 413 after reading little of it', async () => {
    const answer = await streamLogin(300 * 1024 * 1024, false);
    expect(answer.status).toBe(413);
    // The rest of the upload is not drained: the connection closes after the answer.
    expect(answer.connection).toBe('close');
    expect(answer.body.code).toBe('request_too_large');
    expect(answer.bytesSent).toBeLessThan(32 * 1024 * 1024);
  }, 60_000);

  it('answers a declared 300 MB login body with 413 before it is sent', async () => {
    const answer = await streamLogin(300 * 1024 * 1024, true);
    expect(answer.status).toBe(413);
    expect(answer.body.code).toBe('request_too_large');
    expect(answer.bytesSent).toBeLessThan(32 * 1024 * 1024);
  }, 60_000);

  it('gives the admin catalogue routes the larger limit, and still bounds them', async () => {
    const put = (bytes: number) =>
      context.publicApp.request('/api/v1/admin/catalog/packages/p1', {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'x'.repeat(bytes) }),
      });
    // Over the default but within the larger limit: the route's own answer (no session).
    expect((await put(LIMIT * 4)).status).toBe(401);
    expect((await put(LARGE_LIMIT)).status).toBe(413);
  });
});
