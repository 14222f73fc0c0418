import { createHash } from 'node:crypto';
import { AppError } from '@tollgate/errors';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import {
  type BucketState,
  decrementBucket,
  deleteBucket,
  deleteBucketsOlderThan,
  findBucket,
  incrementBucket,
} from './throttle.repository.ts';

/** A fixed-window limit: at most `limit` hits per `windowMs`. */
export interface ThrottleRule {
  limit: number;
  windowMs: number;
}

export interface ThrottleVerdict {
  allowed: boolean;
  /** Start of the window the hit was counted in (null for a peek at an empty bucket). */
  windowStartedAt: Date | null;
  /** Seconds until the window ends (when not allowed). */
  retryAfterSeconds: number;
}

/** Buckets older than this are stale for every rule we configure; pruned now and then. */
const PRUNE_AFTER_MS = 7 * 24 * 60 * 60 * 1000;
const PRUNE_ONE_IN = 200;

function verdictOf(
  state: BucketState | null,
  rule: ThrottleRule,
  now: Date,
  counted: boolean,
): ThrottleVerdict {
  if (!state) return { allowed: true, retryAfterSeconds: 0, windowStartedAt: null };
  const windowEnd = state.windowStartedAt.getTime() + rule.windowMs;
  if (windowEnd <= now.getTime()) return { allowed: true, retryAfterSeconds: 0, windowStartedAt: null };
  // A counted hit is allowed while it is within the limit; a peek asks whether one more would be.
  const allowed = counted ? state.hits <= rule.limit : state.hits < rule.limit;
  return {
    allowed,
    retryAfterSeconds: Math.max(1, Math.ceil((windowEnd - now.getTime()) / 1000)),
    windowStartedAt: state.windowStartedAt,
  };
}

/**
 * Counts one hit against `key` and says whether it is within the rule. The count is one atomic
 * upsert, so it is the slot itself: take it before the guarded work (a password check), never
 * peek first and count afterwards, or concurrent attempts all pass the peek.
 */
export async function hitThrottle(
  db: Kysely<Database>,
  key: string,
  rule: ThrottleRule,
  now: Date,
): Promise<ThrottleVerdict> {
  const state = await incrementBucket(db, key, now, rule.windowMs);
  if (Math.floor(Math.random() * PRUNE_ONE_IN) === 0) {
    await deleteBucketsOlderThan(db, new Date(now.getTime() - PRUNE_AFTER_MS));
  }
  return verdictOf(state, rule, now, true);
}

/** Whether one more hit would be within the rule, without counting it (display only, never a guard). */
export async function peekThrottle(
  db: Kysely<Database>,
  key: string,
  rule: ThrottleRule,
  now: Date,
): Promise<ThrottleVerdict> {
  return verdictOf(await findBucket(db, key), rule, now, false);
}

/** Gives back a slot taken by `hitThrottle` when the attempt it guarded succeeded. */
export async function refundThrottle(
  db: Kysely<Database>,
  key: string,
  verdict: ThrottleVerdict,
): Promise<void> {
  if (verdict.windowStartedAt) await decrementBucket(db, key, verdict.windowStartedAt);
}

/** Counts a hit and throws rate_limit_exceeded (with Retry-After) when over the rule. */
export async function enforceThrottle(
  db: Kysely<Database>,
  key: string,
  rule: ThrottleRule,
  now: Date,
): Promise<void> {
  const verdict = await hitThrottle(db, key, rule, now);
  if (!verdict.allowed) throw throttledError(verdict);
}

export function throttledError(verdict: ThrottleVerdict): AppError {
  return new AppError('rate_limit_exceeded', {
    message: 'Too many attempts. Retry after the time given in Retry-After.',
    retryAfterSeconds: verdict.retryAfterSeconds,
  });
}

/**
 * Bucket key of a rule and the identity it counts (email, address, account...). The identity is
 * hashed so the table holds no email addresses or IP addresses.
 */
export function throttleKey(rule: string, ...identity: string[]): string {
  const digest = createHash('sha256').update(identity.join('\u0000')).digest('base64url');
  return `${rule}:${digest}`;
}

export async function resetThrottle(db: Kysely<Database>, key: string): Promise<void> {
  await deleteBucket(db, key);
}
