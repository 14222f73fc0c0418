import type { Dependencies } from '../../deps.ts';
import * as repository from './billing.repository.ts';

/**
 * Adds the calls settled since the last pass to the usage rollup the summary reads. Off the hot
 * path: reserve and settle never touch the rollup; the summary adds what the rollup lacks.
 */
export async function advanceUsageRollupOnce(deps: Dependencies) {
  return repository.advanceUsageRollup(deps.db, deps.config.billing.usageRollupLagMs);
}

/** Runs a pass now and then every interval until stopped; a failed pass is logged and retried. */
export function startUsageRollup(deps: Dependencies): { stop(): void } {
  let running = false;
  const pass = () => {
    if (running) return;
    running = true;
    advanceUsageRollupOnce(deps)
      .then((result) => {
        if (result.calls > 0) deps.logger.debug(result, 'usage rollup advanced');
      })
      .catch((error: unknown) => deps.logger.error({ err: error }, 'usage rollup pass failed'))
      .finally(() => {
        running = false;
      });
  };
  pass();
  const timer = setInterval(pass, deps.config.billing.usageRollupIntervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
