import type { Logger } from './logger.ts';

/**
 * Runs `pass` every `intervalMs` until stopped (and once at start when asked). A pass still
 * running when the next is due is not started again; a failed pass is logged with `failure` and
 * the next one tries again. The timer never keeps the process alive.
 */
export function startPeriodic(options: {
  intervalMs: number;
  pass: () => Promise<unknown>;
  logger: Logger;
  failure: string;
  runAtStart?: boolean;
}): { stop(): void } {
  let running = false;
  const run = () => {
    if (running) return;
    running = true;
    options
      .pass()
      .catch((error: unknown) => options.logger.error({ err: error }, options.failure))
      .finally(() => {
        running = false;
      });
  };
  if (options.runAtStart) run();
  const timer = setInterval(run, options.intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
