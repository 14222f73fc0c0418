import type { UpstreamBreakerReport } from '@tollgate/schemas';
import type { Logger } from '@tollgate/service-kit';
import type { GatewayMetrics } from '../metrics/metrics.ts';
import type { BreakerState, BreakerStore, Transition } from './breaker-store.ts';
import { type Standing, type UpstreamTarget, upstreamKey } from './upstream-order.ts';

/** Successes are counted in memory and sent to the store together, at most this often. */
const FLUSH_MS = 1_000;
/** The states are read whole again this often, in case a published change was missed. */
const REFRESH_MS = 5_000;
/** After another gateway claimed a probe, this one asks again no sooner than this. */
const PROBE_RECHECK_MS = 500;

export const PROBE: Standing = { kind: 'probe' };

interface Known {
  state: BreakerState;
  /** Instants by this process's clock. */
  openUntil: number;
  benchUntil: number;
  /** No probe claim before this instant (another gateway holds it). */
  recheckAt: number;
  /** When this process learnt the state (its spans count from then). */
  seenAt: number;
}

/**
 * Each upstream's circuit breaker as this gateway knows it (docs/routing.md). The store (Redis:
 * shared) decides every transition; this process keeps the states of open and benched upstreams
 * in memory, told of each change by the store, so a call whose upstreams are healthy pays a map
 * lookup and no round trip. Successes are counted locally and sent once a second; a failure goes
 * at once (with the successes before it), since it may open the breaker.
 */
export function createBreakers(options: {
  store: BreakerStore | null;
  logger: Logger;
  metrics?: GatewayMetrics | undefined;
  now?: () => number;
}) {
  const { store, logger, metrics } = options;
  const now = options.now ?? Date.now;
  const known = new Map<string, Known>();
  const targets = new Map<string, UpstreamTarget>();
  /** Probes this process claimed and has not reported yet. */
  const probing = new Set<string>();
  let successes = new Map<string, number>();
  let flushing: Promise<void> = Promise.resolve();

  const apply = (key: string, state: BreakerState | null) => {
    if (!state) {
      known.delete(key);
      return;
    }
    const at = now();
    known.set(key, {
      state,
      openUntil: state.state === 'open' ? at + state.openForMs : 0,
      benchUntil: at + state.benchedForMs,
      recheckAt: known.get(key)?.recheckAt ?? 0,
      seenAt: at,
    });
  };

  /** Logged and counted once, by the gateway whose call made the change. */
  const announce = (transition: Transition) => {
    apply(transition.key, transition.state);
    const target = targets.get(transition.key);
    const state = transition.state;
    const fields = {
      ...target,
      to: transition.to,
      ...(state
        ? {
            reason: state.reason,
            cause: state.cause,
            openForMs: state.openForMs,
            benchedForMs: state.benchedForMs,
            trips: state.trips,
            failures: state.failures,
            calls: state.calls,
          }
        : {}),
    };
    if (transition.to === 'closed') logger.info(fields, 'upstream breaker closed');
    else if (transition.to === 'benched') logger.warn(fields, 'upstream benched for its Retry-After');
    else
      logger.warn(fields, transition.to === 'open' ? 'upstream breaker opened' : 'upstream breaker reopened');
    if (target) metrics?.breakerTransition(target.providerId, transition.to);
  };

  const refresh = async () => {
    if (!store) return;
    try {
      const states = await store.snapshot();
      for (const key of known.keys()) if (!states.has(key)) known.delete(key);
      for (const [key, state] of states) apply(key, state);
    } catch (error) {
      logger.debug({ err: error }, 'breaker states not read; will retry');
    }
  };

  const flush = () => {
    if (!store || successes.size === 0) return flushing;
    const sending = successes;
    successes = new Map();
    flushing = store.succeeded(sending).catch((error: unknown) => {
      logger.debug({ err: error }, 'breaker successes not counted');
    });
    return flushing;
  };

  store?.onTransition((transition) => apply(transition.key, transition.state));
  store?.onResync(() => void refresh());
  const timers = store
    ? [setInterval(() => void flush(), FLUSH_MS), setInterval(() => void refresh(), REFRESH_MS)]
    : [];
  for (const timer of timers) timer.unref();
  // Listening first: a change made between the read and the subscription would be missed.
  const ready = (store?.listening ?? Promise.resolve()).then(refresh);

  return {
    ready,
    /**
     * Null when nothing is known against the upstream (the common case: no lookup beyond this).
     * An open upstream is out, even while this gateway's probe is under way: only the call that
     * claimed the probe sends it (claimProbes).
     */
    standing(target: UpstreamTarget): Standing | null {
      if (known.size === 0) return null;
      const entry = known.get(upstreamKey(target));
      if (!entry) return null;
      const at = now();
      if (entry.benchUntil > at) return { kind: 'out', until: Math.max(entry.benchUntil, entry.openUntil) };
      if (entry.state.state !== 'open') return null;
      return { kind: 'out', until: entry.openUntil };
    },
    /**
     * Claims the probe of each upstream whose cool-down ended (one call across all gateways gets
     * it); resolves to the upstreams this call probes. Null when there is none to claim, so the
     * healthy path does not wait for anything.
     */
    claimProbes(candidates: readonly UpstreamTarget[]): Promise<Set<string>> | null {
      if (!store || known.size === 0) return null;
      const at = now();
      const due = candidates.filter((target) => {
        const entry = known.get(upstreamKey(target));
        return (
          entry !== undefined &&
          entry.state.state === 'open' &&
          entry.openUntil <= at &&
          entry.benchUntil <= at &&
          entry.recheckAt <= at &&
          !probing.has(upstreamKey(target))
        );
      });
      if (due.length === 0) return null;
      const claimed = new Set<string>();
      return Promise.all(
        due.map(async (target) => {
          const key = upstreamKey(target);
          targets.set(key, target);
          const won = await store.claimProbe(key).catch(() => false);
          if (won) {
            probing.add(key);
            claimed.add(key);
          } else {
            const entry = known.get(key);
            if (entry) entry.recheckAt = now() + PROBE_RECHECK_MS;
          }
        }),
      ).then(() => claimed);
    },
    /** A failure before any byte reached the client; `cause` is a code or status, never provider text. */
    failed(target: UpstreamTarget, failure: { retryAfterMs: number | undefined; cause: string }): void {
      if (!store) return;
      const key = upstreamKey(target);
      targets.set(key, target);
      const probe = probing.delete(key);
      const before = successes.get(key) ?? 0;
      successes.delete(key);
      // This process skips a benched upstream at once, before the store has answered.
      if (failure.retryAfterMs !== undefined && failure.retryAfterMs > 0) {
        const entry = known.get(key);
        const until = now() + failure.retryAfterMs;
        if (entry) entry.benchUntil = Math.max(entry.benchUntil, until);
      }
      store
        .failed(key, { successes: before, probe, retryAfterMs: failure.retryAfterMs, cause: failure.cause })
        .then((transition) => {
          if (transition) announce(transition);
        })
        .catch((error: unknown) => logger.debug({ err: error }, 'breaker failure not counted'));
    },
    /**
     * The upstream answered (its own refusal of the request included). Only the probe's answer
     * closes an open breaker: a call sent before it opened may still answer after.
     */
    succeeded(target: UpstreamTarget): void {
      if (!store) return;
      const key = upstreamKey(target);
      if (probing.delete(key)) {
        targets.set(key, target);
        store
          .close(key)
          .then((transition) => {
            if (transition) announce(transition);
          })
          .catch((error: unknown) => logger.debug({ err: error }, 'breaker not closed'));
        return;
      }
      successes.set(key, (successes.get(key) ?? 0) + 1);
    },
    /** The call ended without telling anything of the upstream (the client left). */
    released(target: UpstreamTarget): void {
      probing.delete(upstreamKey(target));
    },
    /** The open and benched upstreams as this gateway knows them, for its heartbeat (the admin view). */
    report(): UpstreamBreakerReport[] {
      const at = now();
      const iso = (instant: number) => new Date(instant).toISOString();
      const reports: UpstreamBreakerReport[] = [];
      for (const [key, entry] of known) {
        const open = entry.state.state === 'open';
        const benched = entry.benchUntil > at;
        if (!open && !benched) continue;
        const [providerId = '', upstreamModel = ''] = key.split('\u0000');
        reports.push({
          providerId,
          upstreamModel,
          state: entry.state.state,
          reason: entry.state.reason,
          cause: entry.state.cause,
          trips: entry.state.trips,
          failures: entry.state.failures,
          calls: entry.state.calls,
          // Instants by this gateway's clock, from the spans the store handed over.
          changedAt: iso(entry.seenAt - entry.state.changedMsAgo),
          openUntil: open ? iso(entry.openUntil) : null,
          benchedUntil: benched ? iso(entry.benchUntil) : null,
        });
      }
      return reports;
    },
    /** Every open or benched upstream, read from the store (the admin view). */
    async list(): Promise<Map<string, BreakerState>> {
      return store ? store.snapshot() : new Map();
    },
    /** Sends the counted successes now (tests, shutdown). */
    flush,
    async close(): Promise<void> {
      for (const timer of timers) clearInterval(timer);
      await flush();
      await store?.close_();
    },
  };
}

export type Breakers = ReturnType<typeof createBreakers>;
