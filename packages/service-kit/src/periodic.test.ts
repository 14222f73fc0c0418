import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from './logger.ts';
import { startPeriodic } from './periodic.ts';

afterEach(() => vi.useRealTimers());

describe('startPeriodic', () => {
  it('runs at start when asked, never overlaps a pass still running, and logs a failed pass', async () => {
    vi.useFakeTimers();
    const logger = createLogger({ name: 'test', level: 'silent' });
    const errors = vi.spyOn(logger, 'error');
    let calls = 0;
    let finish: () => void = () => {};
    const periodic = startPeriodic({
      intervalMs: 100,
      runAtStart: true,
      logger,
      failure: 'pass failed',
      pass: () => {
        calls += 1;
        if (calls === 2) return Promise.reject(new Error('boom'));
        return new Promise<void>((resolve) => {
          finish = resolve;
        });
      },
    });
    expect(calls).toBe(1);
    await vi.advanceTimersByTimeAsync(350); // the first pass is still running: nothing new starts
    expect(calls).toBe(1);
    finish();
    await vi.advanceTimersByTimeAsync(100);
    expect(calls).toBe(2);
    expect(errors).toHaveBeenCalledWith(expect.objectContaining({ err: expect.any(Error) }), 'pass failed');
    await vi.advanceTimersByTimeAsync(100);
    expect(calls).toBe(3);
    periodic.stop();
    finish();
    await vi.advanceTimersByTimeAsync(500);
    expect(calls).toBe(3);
  });
});
