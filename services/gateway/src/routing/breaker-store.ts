/**
 * Where breaker state lives: Redis (shared by every gateway, docs/routing.md) or this process's
 * memory (one gateway without Redis). Both apply the same rules; every instant they hand back is
 * relative (milliseconds from now), so gateways whose clocks differ from Redis's agree anyway.
 */

export interface BreakerSettings {
  /** Failures in a row that open a breaker. */
  failures: number;
  /** Failed share of the window's calls (per cent) that opens a breaker, once minCalls were made. */
  errorPercent: number;
  windowMs: number;
  minCalls: number;
  /** The first cool-down; each failed probe doubles it, up to maxOpenMs. */
  openMs: number;
  maxOpenMs: number;
  maxRetryAfterMs: number;
  /** How long a half-open probe may stay unanswered before another call may probe. */
  probeTimeoutMs: number;
}

/** Why a breaker is open, for logs and the admin view. */
export type OpenReason = 'consecutive_failures' | 'error_rate' | 'probe_failed';

/** One upstream's state, as every gateway sees it. Closed and unbenched upstreams have none. */
export interface BreakerState {
  state: 'open' | 'closed';
  /** Milliseconds until the cool-down ends (open) and a probe may go. */
  openForMs: number;
  /** Milliseconds until the provider's Retry-After ends (0: not benched). */
  benchedForMs: number;
  /** Cool-downs in a row (each failed probe adds one, a success resets). */
  trips: number;
  reason: OpenReason | null;
  /** The failure that opened it or benched it (a code and status, never provider text). */
  cause: string | null;
  /** Failures and calls in the window when it opened. */
  failures: number;
  calls: number;
  /** Milliseconds since the last change. */
  changedMsAgo: number;
}

export interface Transition {
  key: string;
  /** `closed` with a null state: the breaker closed (and no bench remains). */
  to: 'open' | 'closed' | 'benched' | 'reopened';
  state: BreakerState | null;
}

export interface Failure {
  /** This process's successes not yet counted, sent along so the window sees them first. */
  successes: number;
  /** This call was the half-open probe. */
  probe: boolean;
  retryAfterMs: number | undefined;
  cause: string;
}

export interface BreakerStore {
  readonly kind: 'redis' | 'memory';
  /** Resolves once changes are heard (subscribed), or once that failed (logged). */
  readonly listening: Promise<void>;
  failed(key: string, failure: Failure): Promise<Transition | null>;
  /** Successes counted since the last flush, by key. */
  succeeded(counts: Map<string, number>): Promise<void>;
  /** The one probe of an upstream whose cool-down ended: true for the one caller that may send it. */
  claimProbe(key: string): Promise<boolean>;
  /** A call answered on an open upstream (its probe, or a last resort): the breaker closes. */
  close(key: string): Promise<Transition | null>;
  /** Every upstream that is open or benched. */
  snapshot(): Promise<Map<string, BreakerState>>;
  /** Transitions made by any gateway (this one included). */
  onTransition(listener: (transition: Transition) => void): void;
  /** Called when transitions may have been missed (a reconnect): read the snapshot again. */
  onResync(listener: () => void): void;
  close_(): Promise<void>;
}

/** The cool-down after `trips` openings in a row: doubled by each, up to the maximum. */
export function openSpanMs(settings: BreakerSettings, trips: number): number {
  return Math.min(settings.openMs * 2 ** Math.max(0, trips - 1), settings.maxOpenMs);
}

/** A breaker as stored: instants by the store's own clock. */
export interface Stored {
  state: 'open' | 'closed';
  until: number;
  benchUntil: number;
  trips: number;
  reason: OpenReason | null;
  cause: string | null;
  failures: number;
  calls: number;
  since: number;
}

/** One process's breakers (no Redis: one gateway). */
export function createMemoryBreakerStore(
  settings: BreakerSettings,
  now: () => number = Date.now,
): BreakerStore {
  const states = new Map<string, Stored>();
  /** The instant each claimed probe may be claimed again (its caller never reported). */
  const probes = new Map<string, number>();
  const windows = new Map<string, { consecutive: number; buckets: Map<number, [number, number]> }>();
  const listeners: Array<(transition: Transition) => void> = [];
  const bucketMs = Math.max(1, Math.floor(settings.windowMs / 10));

  const view = viewOf;
  const windowOf = (key: string) => {
    let window = windows.get(key);
    if (!window) {
      window = { consecutive: 0, buckets: new Map() };
      windows.set(key, window);
    }
    return window;
  };
  const count = (key: string, successes: number, failures: number, at: number) => {
    const window = windowOf(key);
    const bucket = Math.floor(at / bucketMs);
    const cell = window.buckets.get(bucket) ?? [0, 0];
    cell[0] += successes;
    cell[1] += failures;
    window.buckets.set(bucket, cell);
    if (successes > 0) window.consecutive = 0;
    window.consecutive += failures;
    let s = 0;
    let f = 0;
    for (const [each, [successCount, failureCount]] of window.buckets) {
      if (each <= bucket - 10) window.buckets.delete(each);
      else {
        s += successCount;
        f += failureCount;
      }
    }
    return { consecutive: window.consecutive, failures: f, calls: s + f };
  };
  const emit = (transition: Transition) => {
    for (const listener of listeners) listener(transition);
    return transition;
  };

  return {
    kind: 'memory',
    listening: Promise.resolve(),
    async failed(key, failure) {
      const at = now();
      const totals = count(key, failure.successes, 1, at);
      let stored = states.get(key);
      let to: Transition['to'] | null = null;
      if (failure.retryAfterMs !== undefined && failure.retryAfterMs > 0) {
        const bench = at + Math.min(failure.retryAfterMs, settings.maxRetryAfterMs);
        if (!stored || stored.benchUntil < bench) {
          stored ??= { ...CLOSED, since: at };
          stored.benchUntil = bench;
          stored.cause = failure.cause;
          to = 'benched';
        }
      }
      if (stored?.state === 'open') {
        if (failure.probe) {
          stored.trips += 1;
          stored.until = at + openSpanMs(settings, stored.trips);
          Object.assign(stored, { reason: 'probe_failed', cause: failure.cause, since: at });
          probes.delete(key);
          to = 'reopened';
        }
      } else {
        const reason = openReason(settings, totals);
        if (reason) {
          stored ??= { ...CLOSED, since: at };
          const trips = stored.trips + 1;
          Object.assign(stored, {
            state: 'open',
            until: at + openSpanMs(settings, trips),
            trips,
            reason,
            cause: failure.cause,
            failures: totals.failures,
            calls: totals.calls,
            since: at,
          });
          to = 'open';
        }
      }
      if (!to || !stored) return null;
      states.set(key, stored);
      return emit({ key, to, state: view(stored, at) });
    },
    async succeeded(counts) {
      const at = now();
      for (const [key, successes] of counts) count(key, successes, 0, at);
    },
    async claimProbe(key) {
      const at = now();
      const stored = states.get(key);
      if (stored?.state !== 'open' || stored.until > at) return false;
      if ((probes.get(key) ?? 0) > at) return false;
      probes.set(key, at + settings.probeTimeoutMs);
      return true;
    },
    async close(key) {
      const at = now();
      const stored = states.get(key);
      probes.delete(key);
      windows.delete(key);
      if (stored?.state !== 'open') return null;
      if (stored.benchUntil > at) {
        Object.assign(stored, { ...CLOSED, benchUntil: stored.benchUntil, since: at });
        return emit({ key, to: 'closed', state: view(stored, at) });
      }
      states.delete(key);
      return emit({ key, to: 'closed', state: null });
    },
    async snapshot() {
      const at = now();
      const result = new Map<string, BreakerState>();
      for (const [key, stored] of states) {
        if (stored.state === 'closed' && stored.benchUntil <= at) states.delete(key);
        else result.set(key, view(stored, at));
      }
      return result;
    },
    onTransition(listener) {
      listeners.push(listener);
    },
    onResync() {},
    async close_() {},
  };
}

/** What a stored breaker looks like `at` an instant of the store's clock. */
export function viewOf(stored: Stored, at: number): BreakerState {
  return {
    state: stored.state,
    openForMs: stored.state === 'open' ? Math.max(0, stored.until - at) : 0,
    benchedForMs: Math.max(0, stored.benchUntil - at),
    trips: stored.trips,
    reason: stored.reason,
    cause: stored.cause,
    failures: stored.failures,
    calls: stored.calls,
    changedMsAgo: Math.max(0, at - stored.since),
  };
}

const CLOSED: Omit<Stored, 'since'> = {
  state: 'closed',
  until: 0,
  benchUntil: 0,
  trips: 0,
  reason: null,
  cause: null,
  failures: 0,
  calls: 0,
};

function openReason(
  settings: BreakerSettings,
  totals: { consecutive: number; failures: number; calls: number },
): OpenReason | null {
  if (totals.consecutive >= settings.failures) return 'consecutive_failures';
  if (totals.calls >= settings.minCalls && totals.failures * 100 >= settings.errorPercent * totals.calls)
    return 'error_rate';
  return null;
}
