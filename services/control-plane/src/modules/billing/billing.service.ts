import { AppError } from '@tollgate/errors';
import {
  type FinishBatchRequest,
  type FinishBatchResponse,
  QUANTITY_MAX,
  type ReserveBatchRequest,
  type ReserveBatchResponse,
} from '@tollgate/schemas';
import type { Transaction } from 'kysely';
import { isOutOfRange } from '../../db/errors.ts';
import type { Database } from '../../db/schema.ts';
import type { Dependencies } from '../../deps.ts';
import { findPackage } from '../catalog/catalog.service.ts';
import { changeBalances } from './engines.ts';
import * as ledger from './ledger.repository.ts';

/**
 * Reserves every item of a batch in the billing engine (billing-engine.ts): a key revoked a moment
 * ago is refused here, whichever engine answers.
 */
export function reserve(deps: Dependencies, request: ReserveBatchRequest): Promise<ReserveBatchResponse> {
  return deps.billing.reserve(request);
}

/**
 * Settles, releases or holds every item of the batch, idempotently, durably, with which upstream
 * served each call that reached one (admins only; docs/routing.md) in the same transaction.
 */
export async function finish(deps: Dependencies, request: FinishBatchRequest): Promise<FinishBatchResponse> {
  const finished = await deps.billing.finish(request);
  deps.settled.notify(settledAccounts(request.items));
  return finished;
}

/** The accounts of the calls a batch settled (automatic top-ups look at their balance). */
function* settledAccounts(items: FinishBatchRequest['items']): Iterable<string> {
  for (const item of items) if (item.action === 'settle') yield item.accountId;
}

export interface GrantPackageInput {
  accountId: string;
  packageId: string;
  cause: string;
  /** A repeat with the same key returns the first grant and grants nothing more. */
  idempotencyKey?: string;
  /** Writes the grant's audit row in the grant's transaction (not on a replay). */
  audit?: (trx: Transaction<Database>, entitlementId: string) => Promise<void>;
}

/** Grants a package's entitlement (tokens, validity, covered aliases, ceilings) to an account. */
export async function grantPackage(
  deps: Dependencies,
  input: GrantPackageInput,
): Promise<{ entitlementId: string; replay: boolean }> {
  if (input.idempotencyKey) {
    const existing = await ledger.findEntitlementByIdempotencyKey(deps.db, input.idempotencyKey);
    if (existing) return sameGrantOrConflict(existing, input);
    if (await ledger.findCreditGrantKey(deps.db, input.idempotencyKey)) throw keyUsedElsewhere();
  }
  const pack = await findPackage(deps, input.packageId);
  const now = deps.clock.now();
  const result = await changeBalances(deps, async ({ trx, lock }) => {
    await lock(input.accountId);
    if (input.idempotencyKey) {
      const existing = await ledger.findEntitlementByIdempotencyKey(trx, input.idempotencyKey);
      if (existing) return sameGrantOrConflict(existing, input);
    }
    const entitlementId = await ledger.insertEntitlement(trx, {
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
      weighted: pack.counts === 'weighted',
    });
    await input.audit?.(trx, entitlementId);
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
    throw keyUsedElsewhere();
  }
  return { entitlementId: existing.id, replay: true };
}

function keyUsedElsewhere(): AppError {
  return AppError.validation({ idempotencyKey: ['This key was already used for a different grant.'] });
}

/** The refusal of a change that would carry a balance past what it can hold (QUANTITY_MAX). */
export function balanceTooLarge(field: string): AppError {
  return AppError.validation({
    [field]: [`The balance would pass the largest amount an account can hold (${QUANTITY_MAX}).`],
  });
}

export interface ChangeCreditInput {
  accountId: string;
  amount: bigint;
  kind: 'grant' | 'adjustment';
  cause: string;
  /** A repeat with the same key grants nothing more (grants only). */
  idempotencyKey?: string;
  /** Writes the change's audit row in the change's transaction (not on a replay). */
  audit?: (trx: Transaction<Database>) => Promise<void>;
}

/**
 * Adds credit (positive) or corrects it (adjustment, either sign; never below zero, never past
 * QUANTITY_MAX). With an idempotency key, a repeat of the same grant answers `replay` and grants
 * nothing; the key used for another grant is validation_failed.
 */
export async function changeCredit(
  deps: Dependencies,
  input: ChangeCreditInput,
): Promise<{ replay: boolean }> {
  const field = input.kind === 'grant' ? 'credits' : 'amount';
  if (input.kind === 'grant' && input.amount <= 0n)
    throw AppError.validation({ [field]: ['Must be positive.'] });
  const key = input.idempotencyKey;
  const replay = await changeBalances(deps, async ({ trx, lock }) => {
    await lock(input.accountId);
    if (key) {
      if (await ledger.findEntitlementByIdempotencyKey(trx, key)) throw keyUsedElsewhere();
      // Two grants of one key to one account wait on the account lock; to two accounts, on the key.
      const claimed = await ledger
        .claimCreditGrantKey(trx, key, input.accountId, input.amount)
        .catch((error: unknown) => {
          if ((error as { code?: string }).code === '23505') throw keyUsedElsewhere();
          throw error;
        });
      if (!claimed) {
        const first = await ledger.findCreditGrantKey(trx, key);
        if (first?.account_id !== input.accountId || first.amount !== input.amount) throw keyUsedElsewhere();
        return true;
      }
    }
    try {
      await ledger.changeCredit(trx, input.accountId, input.amount, input.kind, input.cause);
    } catch (error) {
      if (error instanceof RangeError)
        throw AppError.validation({ [field]: ['The balance would go below zero.'] });
      if (isOutOfRange(error)) throw balanceTooLarge(field);
      throw error;
    }
    await input.audit?.(trx);
    return false;
  }).catch(async (error: unknown) => {
    // Refused after the lease was recalled: Redis must hold again what Postgres still leases.
    await deps.billing.resync(input.accountId).catch(() => {});
    throw error;
  });
  if (!replay) await deps.events.publish({ type: 'account.changed', accountId: input.accountId });
  return { replay };
}
