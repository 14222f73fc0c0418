import { createServer } from 'node:http';
import { type Listening, listen } from './serve.ts';

/** What a metrics registry offers a scraper (prom-client's Registry has this shape). */
export interface MetricsRegistry {
  readonly contentType: string;
  metrics(): Promise<string>;
}

/**
 * Serves `GET /metrics` on a port of its own (METRICS_PORT), apart from the customer-facing port:
 * scrapers reach it on the private network, clients never do.
 */
export function serveMetrics(registry: MetricsRegistry, port: number, host: string): Promise<Listening> {
  const server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => response.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n'),
    );
  });
  return listen(server, port, host);
}
