import { startPeriodic } from '@tollgate/service-kit';
import type { Dependencies } from '../../deps.ts';
import * as repository from './reports.repository.ts';

/**
 * Adds the calls settled since the last pass to the usage rollup the summary reads. Off the hot
 * path: reserve and settle never touch the rollup; the summary adds what the rollup lacks.
 */
export async function advanceUsageRollupOnce(deps: Dependencies) {
  return repository.advanceUsageRollup(deps.db, deps.config.billing.usageRollupLagMs);
}

/** Runs a pass now and then every interval until stopped; a failed pass is logged and retried. */
export function startUsageRollup(deps: Dependencies): { stop(): void } {
  return startPeriodic({
    intervalMs: deps.config.billing.usageRollupIntervalMs,
    runAtStart: true,
    logger: deps.logger,
    failure: 'usage rollup pass failed',
    pass: async () => {
      const result = await advanceUsageRollupOnce(deps);
      if (result.calls > 0) deps.logger.debug(result, 'usage rollup advanced');
    },
  });
}
