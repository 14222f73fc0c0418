import { AppError } from '@tollgate/errors';
import { Piscina } from 'piscina';
import type { CountResult } from './count-worker.ts';

export interface CountedBody {
  model: string | null;
  unsupported: string | null;
  inputTokens: number;
}

/** Counts count_tokens bodies off the event loop. */
export interface TokenCounter {
  /** invalid_request for a body that is not a JSON object (or too deeply nested). */
  count(body: Buffer, signal: AbortSignal): Promise<CountedBody>;
  close(): Promise<void>;
}

/**
 * A pool of `threads` worker threads (piscina: queueing, a crashed worker replaced, a queued task
 * dropped when its client leaves). Workers start on the first call and stop when idle, so a gateway
 * that never counts holds none. How many calls wait is bounded by the keys' concurrency ceilings.
 */
export function createTokenCounter(options: { threads: number; maxJsonDepth: number }): TokenCounter {
  const pool = new Piscina<unknown, CountResult>({
    filename: new URL('./count-worker.ts', import.meta.url).href,
    minThreads: 0,
    maxThreads: options.threads,
    idleTimeout: 60_000,
  });
  return {
    async count(body, signal) {
      let result: CountResult;
      try {
        // Copied, not transferred: a small Buffer shares its memory with others.
        result = await pool.run({ body, maxJsonDepth: options.maxJsonDepth }, { signal });
      } catch (error) {
        if (signal.aborted) throw new AppError('client_disconnected', { cause: error });
        throw error;
      }
      if (!result.ok) throw new AppError('invalid_request', { message: result.message });
      return result;
    },
    close: () => pool.destroy(),
  };
}
