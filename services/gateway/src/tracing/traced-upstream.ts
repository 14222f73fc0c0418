import type { Tracing } from '@tollgate/service-kit';
import type { UpstreamClient } from '../upstream/index.ts';

/**
 * Adds the current request's `traceparent` to each provider call, replacing any the client
 * sent: the provider sees the gateway's span as the parent, in the client's trace.
 */
export function tracedUpstream(tracing: Tracing, client: UpstreamClient): UpstreamClient {
  return {
    send(request) {
      const traceparent = tracing.outgoing();
      if (!traceparent) return client.send(request);
      return client.send({ ...request, headers: { ...request.headers, traceparent } });
    },
    close: () => client.close(),
  };
}
