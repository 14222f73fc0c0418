import { request as httpRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import { bodyFor, type Reply, uniqueTag, useStack } from './support.ts';

const SERVICE_LIMIT = 64 * 1024;
const KEY_LIMIT = 4096;
const t = useStack('gw-body-size', { gatewayEnv: { GATEWAY_MAX_REQUEST_BYTES: String(SERVICE_LIMIT) } });
const CREDITS = 10_000_000n;

/** A JSON body of exactly `bytes` bytes for the path (ASCII padding after the user's text). */
function bodyOfSize(path: string, alias: string, bytes: number, directives = ''): string {
  const base = bodyFor(path, alias, directives);
  const responses = path === '/v1/responses';
  const text = responses ? String(base.input) : (base.messages as Array<{ content: string }>)[0]!.content;
  const withText = (content: string) =>
    JSON.stringify(
      responses ? { ...base, input: content } : { ...base, messages: [{ role: 'user', content }] },
    );
  const padding = bytes - Buffer.byteLength(withText(`${text} `));
  const body = withText(`${text} ${'x'.repeat(padding)}`);
  expect(Buffer.byteLength(body)).toBe(bytes);
  return body;
}

/**
 * POSTs with node:http so the framing is ours: with Content-Length, or chunked (no length) in
 * pieces, optionally never ending the upload. Resolves on the response, whatever the upload does.
 */
function upload(
  path: string,
  secret: string,
  body: string,
  options: { chunked: boolean; end?: boolean; chunkBytes?: number },
): Promise<Reply> {
  const url = new URL(path, t.stack.gatewayUrl);
  return new Promise((resolve, reject) => {
    let answered = false;
    const headers: Record<string, string> = {
      authorization: `Bearer ${secret}`,
      'content-type': 'application/json',
    };
    if (!options.chunked) headers['content-length'] = String(Buffer.byteLength(body));
    const request = httpRequest(url, { method: 'POST', headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        answered = true;
        const replyHeaders = new Headers();
        for (const [name, value] of Object.entries(response.headers)) {
          if (typeof value === 'string') replyHeaders.set(name, value);
        }
        resolve({
          path: url.pathname,
          status: response.statusCode ?? 0,
          headers: replyHeaders,
          text: Buffer.concat(chunks).toString('utf8'),
        });
        request.destroy();
      });
    });
    // After the answer, a server that stops reading may reset the upload: that is expected.
    request.on('error', (error) => {
      if (!answered) reject(error);
    });
    if (options.chunked) {
      expect(request.getHeader('content-length')).toBeUndefined();
      const size = options.chunkBytes ?? 1000;
      for (let offset = 0; offset < body.length; offset += size)
        request.write(body.slice(offset, offset + size));
    } else {
      request.write(body);
    }
    if (options.end !== false) request.end();
  });
}

describe('request body size', () => {
  it("refuses a body over the key's max_request_bytes with request_too_large, with Content-Length and chunked", async () => {
    const key = await t.key({ credits: CREDITS, limits: { maxRequestBytes: KEY_LIMIT } });
    const calls = t.upstreamCalls();
    const cases: Array<[string, string]> = [
      ['/v1/messages', 'claude-test'],
      ['/v1/messages/count_tokens', 'claude-test'],
      ['/v1/chat/completions', 'gpt-test'],
      ['/v1/responses', 'gpt-test'],
    ];
    for (const [path, alias] of cases) {
      const body = bodyOfSize(path, alias, KEY_LIMIT + 1);
      t.expectError(await upload(path, key.secret, body, { chunked: false }), 413, 'request_too_large');
      t.expectError(await upload(path, key.secret, body, { chunked: true }), 413, 'request_too_large');
      // Through fetch too, with a streamed body (no Content-Length).
      const streamed = await fetch(`${t.stack.gatewayUrl}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
        body: new Blob([body]).stream(),
        duplex: 'half',
      } as RequestInit);
      t.expectError(
        { path, status: streamed.status, headers: streamed.headers, text: await streamed.text() },
        413,
        'request_too_large',
      );
    }
    expect(t.upstreamCalls()).toBe(calls);
    await t.expectUntouched(key, { credits: CREDITS });
  });

  it('accepts a body of exactly the limit, with Content-Length and chunked', async () => {
    const key = await t.key({ credits: CREDITS, limits: { maxRequestBytes: KEY_LIMIT } });
    for (const chunked of [false, true]) {
      const tag = uniqueTag('exact');
      const body = bodyOfSize('/v1/messages', 'claude-test', KEY_LIMIT, `tag=${tag}`);
      const reply = await upload('/v1/messages', key.secret, body, { chunked });
      expect(reply.status, reply.text).toBe(200);
      // Forwarded whole: the same bytes but for the longer upstream model id.
      const grown = 'upstream-claude-x1'.length - 'claude-test'.length;
      expect(t.stack.mock.requests(tag)[0]!.bodyBytes).toBe(KEY_LIMIT + grown);
    }
  });

  it('refuses a body over the service limit whatever the key allows', async () => {
    const key = await t.key({ credits: CREDITS });
    const calls = t.upstreamCalls();
    const body = bodyOfSize('/v1/chat/completions', 'gpt-test', SERVICE_LIMIT + 1);
    for (const chunked of [false, true]) {
      const reply = await upload('/v1/chat/completions', key.secret, body, {
        chunked,
        chunkBytes: 16 * 1024,
      });
      const message = t.expectError(reply, 413, 'request_too_large');
      expect(message).toContain(String(SERVICE_LIMIT));
    }
    const messages = bodyOfSize('/v1/messages', 'claude-test', SERVICE_LIMIT + 1);
    t.expectError(
      await upload('/v1/messages', key.secret, messages, { chunked: true }),
      413,
      'request_too_large',
    );
    expect(t.upstreamCalls()).toBe(calls);
    await t.expectUntouched(key, { credits: CREDITS });
  });

  it('answers 413 as soon as a chunked upload passes the limit, without waiting for its end', async () => {
    const key = await t.key({ credits: CREDITS, limits: { maxRequestBytes: KEY_LIMIT } });
    const calls = t.upstreamCalls();
    const body = bodyOfSize('/v1/messages', 'claude-test', 3 * KEY_LIMIT);
    const reply = await upload('/v1/messages', key.secret, body, { chunked: true, end: false });
    t.expectError(reply, 413, 'request_too_large');
    const huge = `{"model":"gpt-test","messages":[{"role":"user","content":"${'y'.repeat(4 * SERVICE_LIMIT)}`;
    const open = await t.key({ credits: CREDITS });
    const refused = await upload('/v1/chat/completions', open.secret, huge, { chunked: true, end: false });
    t.expectError(refused, 413, 'request_too_large');
    expect(t.upstreamCalls()).toBe(calls);
    await t.expectUntouched(key, { credits: CREDITS });
    await t.expectUntouched(open, { credits: CREDITS });
  });
});
