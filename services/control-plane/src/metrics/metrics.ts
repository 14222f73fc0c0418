import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type pg from 'pg';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

export interface ControlPlaneMetrics {
  registry: Registry;
  /** Pool gauges (total, idle, waiting clients), read at scrape time. */
  watchPool(pool: pg.Pool): void;
  /** Wraps the internal billing API's listener: requests and latency by path and status. */
  measureInternal(listener: RequestListener): RequestListener;
}

/** The control plane's Prometheus metrics, in a registry of its own. */
export function createControlPlaneMetrics(): ControlPlaneMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service: 'control-plane' });
  // Process CPU, memory, GC, handles and event-loop lag.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 });

  const pools: pg.Pool[] = [];
  const poolGauge = (name: string, help: string, read: (pool: pg.Pool) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(pools.reduce((sum, pool) => sum + read(pool), 0));
      },
    });
  poolGauge('tollgate_db_pool_connections', 'Open database connections', (pool) => pool.totalCount);
  poolGauge('tollgate_db_pool_idle', 'Idle database connections', (pool) => pool.idleCount);
  poolGauge(
    'tollgate_db_pool_waiting',
    'Queries waiting for a database connection',
    (pool) => pool.waitingCount,
  );

  const internalRequests = new Counter({
    name: 'tollgate_internal_requests_total',
    help: 'Internal billing API requests (reserve, finish, key lookups) by path and status',
    labelNames: ['path', 'status'] as const,
    registers: [registry],
  });
  const internalDuration = new Histogram({
    name: 'tollgate_internal_request_duration_seconds',
    help: 'Internal billing API latency by path (one request carries a batch of reservations)',
    labelNames: ['path'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  // Only known paths become labels; anything else counts as "other" (bounded label set).
  const knownPath = (url: string | undefined) => {
    const path = url?.split('?')[0] ?? '';
    return /^\/internal\/(health|v1\/[a-z-]+(\/[a-z-]+)?)$/.test(path) ? path : 'other';
  };

  return {
    registry,
    watchPool(pool) {
      pools.push(pool);
    },
    measureInternal(listener) {
      return (request: IncomingMessage, response: ServerResponse) => {
        const started = performance.now();
        response.once('finish', () => {
          const path = knownPath(request.url);
          internalRequests.inc({ path, status: String(response.statusCode) });
          internalDuration.observe({ path }, (performance.now() - started) / 1000);
        });
        listener(request, response);
      };
    },
  };
}
