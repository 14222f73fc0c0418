import { createServer } from 'node:http';
import { serveMetrics } from '@tollgate/service-kit';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createControlPlaneMetrics } from './metrics.ts';

const pool = new pg.Pool({ connectionString: inject('testServices').postgresUrl, max: 2 });
afterAll(() => pool.end());

describe('control-plane metrics', () => {
  it('serves pool gauges, internal API requests by path and status, and process metrics', async () => {
    const metrics = createControlPlaneMetrics();
    metrics.watchPool(pool);
    await pool.query('select 1');
    const internal = createServer(
      metrics.measureInternal((request, response) => {
        response.statusCode = request.url === '/internal/v1/reservations' ? 200 : 404;
        response.end('{}');
      }),
    );
    await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
    const address = internal.address();
    const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    await fetch(`${base}/internal/v1/reservations`, { method: 'POST' });
    await fetch(`${base}/internal/v1/reservations`, { method: 'POST' });
    await fetch(`${base}/no/such/${Date.now()}`);
    const served = await serveMetrics(metrics.registry, 0, '127.0.0.1');
    try {
      const text = await (await fetch(`${served.url}/metrics`)).text();
      expect(text).toMatch(
        /^tollgate_internal_requests_total\{path="\/internal\/v1\/reservations",status="200",service="control-plane"\} 2$/m,
      );
      // Unknown paths never become labels of their own.
      expect(text).toMatch(
        /^tollgate_internal_requests_total\{path="other",status="404",service="control-plane"\} 1$/m,
      );
      expect(text).toMatch(/^tollgate_db_pool_connections\{service="control-plane"\} 1$/m);
      expect(text).toMatch(/^tollgate_db_pool_idle\{service="control-plane"\} 1$/m);
      expect(text).toMatch(/^nodejs_eventloop_lag_seconds\{service="control-plane"\} /m);
      expect((await fetch(`${served.url}/other`)).status).toBe(404);
    } finally {
      await served.close();
      await new Promise((resolve) => internal.close(resolve));
    }
  });
});
