import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** Codes that mean the limiter refused the call (nothing reached the control plane). */
const LIMITER_CODES = new Set([
  'rate_limit_exceeded',
  'concurrency_limit_exceeded',
  'rate_limiter_unavailable',
]);

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const BATCH_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200];

export interface GatewayMetrics {
  registry: Registry;
  /** One finished request: its route (surface), alias (or "none") and outcome code ("ok" on 2xx). */
  request(
    route: string,
    alias: string | undefined,
    status: number,
    code: string | undefined,
    ms: number,
  ): void;
  /** One reserve (or finish) call to the control plane: how many items it carried and how long it took. */
  billingCall(kind: 'reserve' | 'finish', items: number, ms: number, ok: boolean): void;
  /** Read at scrape time: settlements queued and not yet acknowledged by the control plane. */
  watchPending(read: () => number): void;
  /** One failed provider call, by provider id and cause (the reason of the warn log line). */
  upstreamFailure(providerId: string, cause: string): void;
  /** A provider refused a credential of its pool, which left the rotation (its name, never its value). */
  credentialRefused(providerId: string, credential: string): void;
  /** How long one request waited for its reservation (queue and control plane), by result. */
  reserve(ms: number, ok: boolean): void;
  /** From sending a provider call to its response headers, by result. */
  upstreamHeaders(ms: number, ok: boolean): void;
  /** One breaker transition made by this gateway's call (open, reopened, closed, benched), by provider. */
  breakerTransition(providerId: string, to: string): void;
  /** From a request's arrival to the first byte of its body handed to the client, by route. */
  firstByte(route: string, ms: number): void;
}

/**
 * The gateway's Prometheus metrics, in a registry of its own (not prom-client's global one).
 * Counters and histograms with few, bounded labels: the hot path pays a map lookup and an add.
 */
export function createGatewayMetrics(): GatewayMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service: 'gateway' });
  // Process CPU, memory, GC, handles and event-loop lag (nodejs_eventloop_lag_*).
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 });

  const requests = new Counter({
    name: 'tollgate_gateway_requests_total',
    help: 'Requests by route, alias and outcome code',
    labelNames: ['route', 'alias', 'code'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'tollgate_gateway_request_duration_seconds',
    help: 'Time to response headers, by route (streams: to the first byte sent)',
    labelNames: ['route'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const refusals = new Counter({
    name: 'tollgate_gateway_limiter_refusals_total',
    help: 'Calls the limiter refused, by code',
    labelNames: ['code'] as const,
    registers: [registry],
  });
  const billingDuration = new Histogram({
    name: 'tollgate_gateway_billing_call_duration_seconds',
    help: 'Reserve and finish calls to the control plane (one call carries a batch)',
    labelNames: ['kind', 'result'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const batchSize = new Histogram({
    name: 'tollgate_gateway_billing_batch_items',
    help: 'Items per reserve or finish call to the control plane',
    labelNames: ['kind'] as const,
    buckets: BATCH_BUCKETS,
    registers: [registry],
  });
  const readers: Array<() => number> = [];
  new Gauge({
    name: 'tollgate_gateway_settlements_pending',
    help: 'Settlements, releases and holds queued for the control plane and not yet acknowledged',
    registers: [registry],
    collect() {
      this.set(readers.reduce((sum, read) => sum + read(), 0));
    },
  });

  const upstreamFailures = new Counter({
    name: 'tollgate_gateway_upstream_failures_total',
    help: 'Failed provider calls by provider and cause (dns, connection_refused, credential_refused, ...)',
    labelNames: ['provider', 'cause'] as const,
    registers: [registry],
  });
  const credentialRefusals = new Counter({
    name: 'tollgate_gateway_credential_refusals_total',
    help: 'Credentials of a provider pool taken out of rotation because the provider refused them, by provider and credential name',
    labelNames: ['provider', 'credential'] as const,
    registers: [registry],
  });
  const breakerTransitions = new Counter({
    name: 'tollgate_gateway_breaker_transitions_total',
    help: 'Upstream breaker transitions (open, reopened, closed, benched) by provider; each counted by the gateway whose call made it',
    labelNames: ['provider', 'to'] as const,
    registers: [registry],
  });
  const reserveDuration = new Histogram({
    name: 'tollgate_gateway_reserve_duration_seconds',
    help: 'Time a request waits for its reservation (batch queue and control plane)',
    labelNames: ['result'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const upstreamDuration = new Histogram({
    name: 'tollgate_gateway_upstream_headers_seconds',
    help: 'Time from sending a provider call to its response headers',
    labelNames: ['result'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const firstByteDuration = new Histogram({
    name: 'tollgate_gateway_time_to_first_byte_seconds',
    help: 'Time from a request to the first byte of its body handed to the client, by route',
    labelNames: ['route'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });

  return {
    registry,
    credentialRefused(providerId, credential) {
      credentialRefusals.inc({ provider: providerId, credential });
    },
    upstreamFailure(providerId, cause) {
      upstreamFailures.inc({ provider: providerId, cause });
    },
    breakerTransition(providerId, to) {
      breakerTransitions.inc({ provider: providerId, to });
    },
    reserve(ms, ok) {
      reserveDuration.observe({ result: ok ? 'ok' : 'error' }, ms / 1000);
    },
    upstreamHeaders(ms, ok) {
      upstreamDuration.observe({ result: ok ? 'ok' : 'error' }, ms / 1000);
    },
    firstByte(route, ms) {
      firstByteDuration.observe({ route }, ms / 1000);
    },
    request(route, alias, status, code, ms) {
      const outcome = code ?? (status < 400 ? 'ok' : String(status));
      requests.inc({ route, alias: alias ?? 'none', code: outcome });
      duration.observe({ route }, ms / 1000);
      if (code && LIMITER_CODES.has(code)) refusals.inc({ code });
    },
    billingCall(kind, items, ms, ok) {
      batchSize.observe({ kind }, items);
      billingDuration.observe({ kind, result: ok ? 'ok' : 'error' }, ms / 1000);
    },
    watchPending(read) {
      readers.push(read);
    },
  };
}

/** Wraps a batch call so each one is measured (items, duration, outcome). */
export function measuredBatch<T, R>(
  metrics: GatewayMetrics | undefined,
  kind: 'reserve' | 'finish',
  call: (items: T[]) => Promise<R>,
): (items: T[]) => Promise<R> {
  if (!metrics) return call;
  return async (items) => {
    const started = performance.now();
    try {
      const result = await call(items);
      metrics.billingCall(kind, items.length, performance.now() - started, true);
      return result;
    } catch (error) {
      metrics.billingCall(kind, items.length, performance.now() - started, false);
      throw error;
    }
  };
}
