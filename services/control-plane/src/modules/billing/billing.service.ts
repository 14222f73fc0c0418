import { AppError } from '@tollgate/errors';
import type {
  FinishBatchRequest,
  FinishBatchResponse,
  ReserveBatchRequest,
  ReserveBatchResponse,
} from '@tollgate/schemas';
import type { Dependencies } from '../../deps.ts';
import { findPackage } from '../catalog/catalog.service.ts';
import * as repository from './billing.repository.ts';
import { finishResultOf, finishRowOfItem, reserveResultOf, reserveRowOf } from './billing.rows.ts';

/**
 * Reserves every item of a batch: in the hot tier when there is one, else in one Postgres round
 * trip, where key state, expiry, scope and alias are checked again inside the transaction. Either
 * way a key revoked a moment ago is refused here.
 */
export async function reserve(
  deps: Dependencies,
  request: ReserveBatchRequest,
): Promise<ReserveBatchResponse> {
  if (deps.hot) return deps.hot.reserve(request);
  const settings = {
    keyPepper: deps.config.keyPepper,
    coverPercent: deps.config.billing.overrunCoverPercent,
  };
  const results = await repository.reserveBatch(
    deps.prepared,
    request.items.map((item) => reserveRowOf(settings, item)),
  );
  return { results: results.map(reserveResultOf) };
}

/** Settles, releases or holds every item of a batch, idempotently, durably. */
export async function finish(deps: Dependencies, request: FinishBatchRequest): Promise<FinishBatchResponse> {
  if (deps.hot) return deps.hot.finish(request);
  const results = await repository.finishBatch(deps.prepared, request.items.map(finishRowOfItem));
  return { results: results.map(finishResultOf) };
}

export interface GrantPackageInput {
  accountId: string;
  packageId: string;
  cause: string;
  /** A repeat with the same key returns the first grant and grants nothing more. */
  idempotencyKey?: string;
}

/** Grants a package's entitlement (tokens, validity, covered aliases, ceilings) to an account. */
export async function grantPackage(
  deps: Dependencies,
  input: GrantPackageInput,
): Promise<{ entitlementId: string; replay: boolean }> {
  if (input.idempotencyKey) {
    const existing = await repository.findEntitlementByIdempotencyKey(deps.db, input.idempotencyKey);
    if (existing) return sameGrantOrConflict(existing, input);
  }
  const pack = await findPackage(deps, input.packageId);
  const now = deps.clock.now();
  const result = await deps.db.transaction().execute(async (trx) => {
    await repository.lockAccount(trx, input.accountId, deps.hot);
    if (input.idempotencyKey) {
      const existing = await repository.findEntitlementByIdempotencyKey(trx, input.idempotencyKey);
      if (existing) return sameGrantOrConflict(existing, input);
    }
    const entitlementId = await repository.insertEntitlement(trx, {
      account_id: input.accountId,
      package_id: pack.id,
      aliases: pack.aliases,
      granted: pack.tokens,
      expires_at:
        pack.validity_days === null ? null : new Date(now.getTime() + pack.validity_days * 86_400_000),
      max_output_tokens: pack.max_output_tokens,
      requests_per_minute: pack.requests_per_minute,
      concurrency: pack.concurrency,
      cause: input.cause,
      idempotency_key: input.idempotencyKey ?? null,
    });
    return { entitlementId, replay: false };
  });
  if (!result.replay) await deps.events.publish({ type: 'account.changed', accountId: input.accountId });
  return result;
}

function sameGrantOrConflict(
  existing: { id: string; account_id: string; package_id: string | null },
  input: GrantPackageInput,
): { entitlementId: string; replay: boolean } {
  if (existing.account_id !== input.accountId || existing.package_id !== input.packageId) {
    throw AppError.validation({ idempotencyKey: ['This key was already used for a different grant.'] });
  }
  return { entitlementId: existing.id, replay: true };
}

/** Adds credit (positive) or corrects it (adjustment, either sign; never below zero). */
export async function changeCredit(
  deps: Dependencies,
  input: { accountId: string; amount: bigint; kind: 'grant' | 'adjustment'; cause: string },
): Promise<void> {
  if (input.kind === 'grant' && input.amount <= 0n)
    throw AppError.validation({ amount: ['Must be positive.'] });
  await deps.db.transaction().execute(async (trx) => {
    await repository.lockAccount(trx, input.accountId, deps.hot);
    try {
      await repository.changeCredit(trx, input.accountId, input.amount, input.kind, input.cause);
    } catch (error) {
      if (error instanceof RangeError)
        throw AppError.validation({ amount: ['The balance would go below zero.'] });
      throw error;
    }
  });
  await deps.events.publish({ type: 'account.changed', accountId: input.accountId });
}
