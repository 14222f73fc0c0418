import { AppError } from '@tollgate/errors';
import type { KeyStatus, ResolvedKey } from '@tollgate/schemas';
import type { Dependencies } from '../../deps.ts';
import { readAccountBalances } from '../billing/balances.ts';
import { listUsableEntitlements } from '../billing/engine.repository.ts';
import { toSpendCapView } from '../spend-caps/spend-caps.schemas.ts';
import { readCapStatus } from '../spend-caps/spend-caps.service.ts';
import { findKeyByDigest, type KeyRecord } from './api-keys.service.ts';

async function findKey(deps: Dependencies, keyDigest: string): Promise<KeyRecord> {
  const key = await findKeyByDigest(deps.db, deps.config.keyPepper, keyDigest, deps.clock.now());
  if (!key) throw new AppError('invalid_api_key');
  return key;
}

/**
 * The key behind a presented secret, as a gateway caches it: state, scope, ceilings and the plan
 * ceilings of the account's usable entitlements (in the order reservations draw from them).
 */
export async function resolveKeyForGateway(deps: Dependencies, keyDigest: string): Promise<ResolvedKey> {
  const key = await findKey(deps, keyDigest);
  const plans = await listUsableEntitlements(deps.db, key.accountId);
  return {
    keyId: key.keyId,
    accountId: key.accountId,
    state: key.state,
    accountSuspended: key.accountSuspended,
    expiresAt: key.expiresAt?.toISOString() ?? null,
    scope: key.scope,
    limits: key.limits,
    plans: plans.map((plan) => ({
      packageId: plan.package_id ?? `entitlement:${plan.id}`,
      aliases: plan.aliases,
      expiresAt: plan.expires_at?.toISOString() ?? null,
      maxOutputTokens: plan.max_output_tokens,
      requestsPerMinute: plan.requests_per_minute,
      concurrency: plan.concurrency,
    })),
  };
}

/** GET /v1/key/status: state, scope, ceilings, and balances (read-only; reserves nothing). */
export async function readKeyStatusForGateway(deps: Dependencies, keyDigest: string): Promise<KeyStatus> {
  const key = await findKey(deps, keyDigest);
  const balances = await readAccountBalances(deps, key.accountId, {
    now: deps.clock.now(),
    scope: key.scope,
  });
  return {
    keyId: key.keyId,
    name: key.name,
    state: key.state,
    expiresAt: key.expiresAt?.toISOString() ?? null,
    scope: key.scope,
    limits: key.limits,
    remaining: balances.remaining,
    reserved: balances.reserved,
    caps: (await readCapStatus(deps, key.accountId, key.keyId)).caps.map(toSpendCapView),
  };
}
