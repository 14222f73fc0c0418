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

/**
 * Observes the time to the first body byte handed to the client. A streamed answer (SSE) is
 * read through a pass-through that notes its first chunk; cancelling it cancels the original,
 * so a client that hangs up is seen exactly as before. Any other body is complete in memory:
 * its first byte leaves with the headers.
 */
export function timedFirstByte(
  metrics: GatewayMetrics | undefined,
  route: string,
  started: number,
  response: Response,
): Response {
  if (!metrics) return response;
  const body = response.body;
  const streamed = response.headers.get('content-type')?.includes('text/event-stream') ?? false;
  if (!body || !streamed) {
    metrics.firstByte(route, performance.now() - started);
    return response;
  }
  const reader = body.getReader();
  let first = true;
  const relayed = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) {
        controller.close();
        return;
      }
      if (first) {
        first = false;
        metrics.firstByte(route, performance.now() - started);
      }
      controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  return new Response(relayed, { status: response.status, headers: response.headers });
}
