import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Tracing } from '@tollgate/service-kit';

type Listener = (request: IncomingMessage, response: ServerResponse) => void;

/**
 * One span per internal call, child of the gateway span named by its `traceparent` (a batched
 * reserve or finish carries the trace of the request that opened the batch). Only when spans are
 * exported: otherwise the listener is returned as it is and the hot path pays nothing.
 */
export function tracedListener(tracing: Tracing, listener: Listener): Listener {
  if (!tracing.exporting) return listener;
  return (request, response) => {
    const header = request.headers.traceparent;
    const path = (request.url ?? '/').split('?')[0] ?? '/';
    const span = tracing.start(
      `${request.method ?? 'GET'} ${path}`,
      Array.isArray(header) ? header[0] : header,
    );
    response.once('close', () => span.end({ 'http.response.status_code': response.statusCode }));
    tracing.run(span, () => listener(request, response));
  };
}
