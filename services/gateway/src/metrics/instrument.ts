import type { ReserveItem, ReserveResult } from '@tollgate/schemas';
import type { UpstreamClient } from '../upstream/index.ts';
import type { GatewayMetrics } from './metrics.ts';

/**
 * Wrappers that time the hot path's waits from the outside (server.ts composes them), so the
 * proxy code stays free of measuring. Without metrics each returns what it was given.
 */

/** Times each request's wait for its reservation, batch queue included. */
export function timedReserve(
  metrics: GatewayMetrics | undefined,
  reserve: (item: ReserveItem) => Promise<ReserveResult>,
): (item: ReserveItem) => Promise<ReserveResult> {
  if (!metrics) return reserve;
  return async (item) => {
    const started = performance.now();
    try {
      const result = await reserve(item);
      metrics.reserve(performance.now() - started, true);
      return result;
    } catch (error) {
      metrics.reserve(performance.now() - started, false);
      throw error;
    }
  };
}

/** Times each provider call to its response headers (a refused or timed-out call counts as error). */
export function timedUpstream(metrics: GatewayMetrics | undefined, client: UpstreamClient): UpstreamClient {
  if (!metrics) return client;
  return {
    async send(request) {
      const started = performance.now();
      try {
        const response = await client.send(request);
        metrics.upstreamHeaders(performance.now() - started, true);
        return response;
      } catch (error) {
        metrics.upstreamHeaders(performance.now() - started, false);
        throw error;
      }
    },
    close: () => client.close(),
  };
}
