import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { DEFAULT_SERVER_LIMITS, listen } from './serve.ts';

describe('listen(...).close', () => {
  it('lets a request in flight finish, then closes without waiting for its idle keep-alive connection', async () => {
    const running = await listen(
      (_request, response) => {
        response.write('first ');
        setTimeout(() => response.end('last'), 200); // an answer that takes real time to finish
      },
      0,
      '127.0.0.1',
    );
    const agent = new Agent({ keepAlive: true });
    try {
      let firstChunk!: () => void;
      const writing = new Promise<void>((resolve) => {
        firstChunk = resolve;
      });
      const body = new Promise<string>((resolve, reject) => {
        request(`${running.url}/`, { agent }, (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => {
            text += chunk;
            firstChunk();
          });
          response.on('end', () => resolve(text));
        })
          .on('error', reject)
          .end();
      });
      // Closing while the answer is still being written: its first part has arrived.
      await writing;
      const started = Date.now();
      await running.close(5_000);
      expect(await body).toBe('first last');
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      agent.destroy();
    }
  });
});

describe('listen(...).close with a connection that never sent a request', () => {
  it('drops it at once instead of waiting out the grace period', async () => {
    const running = await listen((_request, response) => response.end('ok'), 0, '127.0.0.1');
    const socket = connect(running.port, '127.0.0.1');
    socket.on('error', () => {});
    await new Promise((resolve) => socket.once('connect', resolve));
    const started = Date.now();
    await running.close(5_000);
    expect(Date.now() - started).toBeLessThan(2_000);
    socket.destroy();
  });
});

/** Resolves with the time the server took to close the socket, and whatever it answered. */
function whenClosed(socket: Socket): Promise<{ ms: number; answer: string }> {
  const started = Date.now();
  let answer = '';
  socket.on('data', (chunk: Buffer) => {
    answer += chunk.toString('latin1');
  });
  socket.on('error', () => {});
  return new Promise((resolve) => socket.on('close', () => resolve({ ms: Date.now() - started, answer })));
}

describe('listen limits', () => {
  it('cuts off a client that sends its headers one byte at a time', async () => {
    const running = await listen((_request, response) => response.end('ok'), 0, '127.0.0.1', {
      ...DEFAULT_SERVER_LIMITS,
      headersTimeoutMs: 600,
    });
    const socket = connect(running.port, '127.0.0.1');
    const closed = whenClosed(socket);
    const header = 'GET / HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
    let at = 0;
    // Real time is what is tested: a client slower than the headers timeout.
    const drip = setInterval(() => {
      if (at < header.length && !socket.destroyed) socket.write(header[at++]!);
    }, 100);
    try {
      const { ms, answer } = await closed;
      expect(ms).toBeLessThan(3_000);
      expect(answer).toMatch(/^HTTP\/1\.1 408/);
    } finally {
      clearInterval(drip);
      await running.close(100);
    }
  });

  it('closes connections beyond the cap of one client address', async () => {
    const running = await listen((_request, response) => response.end('ok'), 0, '127.0.0.1', {
      ...DEFAULT_SERVER_LIMITS,
      maxConnectionsPerAddress: 2,
    });
    const sockets = [0, 1, 2].map(() => connect(running.port, '127.0.0.1'));
    try {
      const third = whenClosed(sockets[2]!);
      await new Promise<void>((resolve) => sockets[1]!.once('connect', () => resolve()));
      const { ms } = await third;
      expect(ms).toBeLessThan(1_000);
      expect(sockets[0]!.destroyed).toBe(false);
      // One closes, and a new connection from the same address is served again.
      sockets[0]!.destroy();
      // The address's slot is freed as the server sees the close: wait until it holds one connection.
      const connections = () =>
        new Promise<number>((resolve) => running.server.getConnections((_error, count) => resolve(count)));
      await expect.poll(connections).toBe(1);
      const answer = await new Promise<string>((resolve, reject) =>
        request(`${running.url}/`, { agent: false }, (response) => {
          response.resume();
          response.on('end', () => resolve(String(response.statusCode)));
        })
          .on('error', reject)
          .end(),
      );
      expect(answer).toBe('200');
    } finally {
      for (const socket of sockets) socket.destroy();
      await running.close(100);
    }
  });
});
