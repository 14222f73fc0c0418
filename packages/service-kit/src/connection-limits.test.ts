import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { addressGroupOf, clientAddressOf } from './client-address.ts';
import { HttpServerEnv, parseEnv, serverLimitsOf } from './config.ts';
import { DEFAULT_SERVER_LIMITS, listen } from './serve.ts';

/** Resolves when the server has closed the socket (the client reads, so it sees the close). */
function closedByServer(socket: Socket): Promise<string> {
  let answer = '';
  socket.on('data', (chunk: Buffer) => {
    answer += chunk.toString('latin1');
  });
  socket.on('error', () => {});
  return new Promise((resolve) => socket.once('close', () => resolve(answer)));
}

describe('connections that send nothing', () => {
  it('are closed once the header timeout passes, as are those that stop mid-headers', async () => {
    const running = await listen((_request, response) => response.end('ok'), 0, '127.0.0.1', {
      ...DEFAULT_SERVER_LIMITS,
      headersTimeoutMs: 500,
    });
    try {
      const silent = connect(running.port, '127.0.0.1');
      const partial = connect(running.port, '127.0.0.1', () =>
        partial.write('GET / HTTP/1.1\r\nHost: x\r\n'),
      );
      const [silentAnswer, partialAnswer] = await Promise.all([
        closedByServer(silent),
        closedByServer(partial),
      ]);
      expect(silentAnswer).toMatch(/^HTTP\/1\.1 408/);
      expect(partialAnswer).toMatch(/^HTTP\/1\.1 408/);
    } finally {
      await running.close(100);
    }
  });
});

describe('the per-address connection cap', () => {
  it('is on by default in both services (HTTP_MAX_CONNECTIONS_PER_ADDRESS)', () => {
    const limits = serverLimitsOf(parseEnv('test', z.object(HttpServerEnv), {}));
    expect(limits.maxConnectionsPerAddress).toBe(256);
    expect(DEFAULT_SERVER_LIMITS.maxConnectionsPerAddress).toBe(256);
    expect(
      serverLimitsOf(parseEnv('test', z.object(HttpServerEnv), { HTTP_MAX_CONNECTIONS_PER_ADDRESS: '0' })),
    ).toMatchObject({
      maxConnectionsPerAddress: 0,
    });
  });

  it('counts an IPv6 client by its /64 and an IPv4-mapped address as IPv4', () => {
    expect(addressGroupOf('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressGroupOf('2001:db8:1:2:bbbb:cccc:dddd:eeee')).toBe('2001:db8:1:2::/64');
    expect(addressGroupOf('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressGroupOf('::1')).toBe('0:0:0:0::/64');
    expect(addressGroupOf('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressGroupOf('203.0.113.7')).toBe('203.0.113.7');
    expect(addressGroupOf(undefined)).toBe('unknown');
  });

  it('believes X-Forwarded-For only behind a trusted proxy, and then only its last entry', () => {
    expect(clientAddressOf('1.1.1.1, 203.0.113.7', '10.0.0.2', true)).toBe('203.0.113.7');
    expect(clientAddressOf('1.1.1.1', '10.0.0.2', false)).toBe('10.0.0.2');
    expect(clientAddressOf(null, '10.0.0.2', true)).toBe('10.0.0.2');
  });
});

describe('absolute-form request targets', () => {
  it('are routed like their origin form (RFC 9112 3.2.2)', async () => {
    const seen: string[] = [];
    const running = await listen(
      (incoming, response) => {
        seen.push(incoming.url ?? '');
        response.end('ok');
      },
      0,
      '127.0.0.1',
    );
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const outgoing = request({
          host: '127.0.0.1',
          port: running.port,
          path: `http://gateway.example.test:${running.port}/v1/models?x=1`,
          agent: false,
        });
        outgoing.on('response', (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        });
        outgoing.on('error', reject);
        outgoing.end();
      });
      expect(status).toBe(200);
      expect(seen).toEqual(['/v1/models?x=1']);
    } finally {
      await running.close(100);
    }
  });
});
