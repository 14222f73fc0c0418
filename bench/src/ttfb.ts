import { Pool } from 'undici';

/**
 * Time to the first streamed byte, sequentially over one keep-alive connection: the moment the
 * first body chunk arrives, measured from just before the request is written. p50 in ms.
 */
export async function measureTimeToFirstByte(options: {
  origin: string;
  path: string;
  body: string;
  headers: Record<string, string>;
  count: number;
}): Promise<{ p50: number; p90: number; errors: number }> {
  const pool = new Pool(options.origin, { connections: 1 });
  const samples: number[] = [];
  let errors = 0;
  try {
    for (let index = 0; index < options.count + 20; index += 1) {
      const started = performance.now();
      const response = await pool.request({
        method: 'POST',
        path: options.path,
        headers: options.headers,
        body: options.body,
      });
      let first = 0;
      for await (const _chunk of response.body) {
        if (first === 0) first = performance.now() - started;
      }
      if (response.statusCode !== 200) errors += 1;
      if (index >= 20) samples.push(first);
    }
  } finally {
    await pool.close();
  }
  samples.sort((a, b) => a - b);
  const at = (fraction: number) =>
    samples[Math.min(samples.length - 1, Math.floor(samples.length * fraction))] ?? Number.NaN;
  return { p50: at(0.5), p90: at(0.9), errors };
}
