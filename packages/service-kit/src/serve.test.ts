import { Agent, request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { listen } from './serve.ts';

describe('listen(...).close', () => {
  it('lets a request in flight finish, then closes without waiting for its idle keep-alive connection', async () => {
    const running = await listen(
      (_request, response) => {
        response.write('first ');
        setTimeout(() => response.end('last'), 200);
      },
      0,
      '127.0.0.1',
    );
    const agent = new Agent({ keepAlive: true });
    try {
      const body = new Promise<string>((resolve, reject) => {
        request(`${running.url}/`, { agent }, (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => {
            text += chunk;
          });
          response.on('end', () => resolve(text));
        })
          .on('error', reject)
          .end();
      });
      // Closing while the answer is still being written.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const started = Date.now();
      await running.close(5_000);
      expect(await body).toBe('first last');
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      agent.destroy();
    }
  });
});
