import type { RequestBudget } from '@tollgate/schemas';

/** One request's claim on the limits: per-key and per-package request rates and concurrency. */
export interface LimitRequest {
  keyId: string;
  /** The key's account: its limits share one hash slot on a Redis Cluster (see redis-keys.ts). */
  accountId?: string;
  keyRequestsPerMinute: number;
  /** Null for calls that hold no concurrency slot (the GET endpoints, count_tokens). */
  keyConcurrency: number | null;
  /** The package the call would draw from (account + package), with its ceilings; null if none. */
  plan: { id: string; requestsPerMinute: number | null; concurrency: number | null } | null;
  /** Unique per request; names the concurrency lease. */
  leaseId: string;
}

export type LimitDecision =
  /** budget: the tighter of the key's and the package's request budgets once the call was counted. */
  | { allowed: true; lease: Lease | null; budget: RequestBudget }
  | {
      allowed: false;
      code: 'rate_limit_exceeded' | 'concurrency_limit_exceeded';
      retryAfterSeconds: number;
      /** The exhausted budget (rate_limit_exceeded only). */
      budget?: RequestBudget;
    };

/** A held concurrency slot. Expires by itself if the process holding it dies. */
export interface Lease {
  /**
   * Frees the slot (never rejects). Call it before answering: once it resolves, the limiter has
   * the release (in memory), or it is written to Redis ahead of anything the client can send
   * after the answer, so the client's next call, through any gateway, cannot find this finished
   * call in flight.
   */
  release(): Promise<void>;
}

/**
 * Request-rate and concurrency limits. With Redis they are shared by every gateway process and
 * checked atomically; without, they hold for this process only. An unreachable limiter throws
 * rate_limiter_unavailable: the request is refused, never let through unmetered.
 */
export interface Limiter {
  readonly kind: 'redis' | 'memory';
  /**
   * With Redis, where its counts live: a metered call's limits are then checked by the control
   * plane in the same step that reserves (one round trip instead of two), which then also owns
   * the call's concurrency slot (docs/decisions/one-owner-of-the-slot.md). Null: checked here.
   */
  readonly shared: { prefix: string; windowMs: number; leaseTtlMs: number } | null;
  acquire(request: LimitRequest): Promise<LimitDecision>;
  /** Whether the limiter can be reached now (waits briefly for a reconnect). */
  reachable(): Promise<boolean>;
  close(): Promise<void>;
}

export interface LimiterSettings {
  /** Length of a rate window; ceilings are "per minute" so this is 60 s outside tests. */
  windowMs: number;
  /**
   * Lifetime of a concurrency lease; renewed (every third of it) while the request runs, so it
   * can be short: a crashed gateway's slots free within it.
   */
  leaseTtlMs: number;
  /** Retry-After for concurrency refusals (short: docs/behaviour.md, Limits). */
  concurrencyRetryAfterSeconds: number;
}

/** Leases are renewed three times per lifetime, so one late renewal never lets a live one lapse. */
export function renewIntervalMs(leaseTtlMs: number): number {
  return Math.max(50, Math.floor(leaseTtlMs / 3));
}
