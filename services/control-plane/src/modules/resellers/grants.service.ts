import { createHash } from 'node:crypto';
import { AppError } from '@tollgate/errors';
import type { Dependencies } from '../../deps.ts';
import { type Actor, recordAudit } from '../audit/audit.service.ts';
import { balancesIn } from '../billing/engines.ts';
import { transferCredit, transferPackageTokens } from '../billing/transfers.ts';
import { findPackage } from '../catalog/catalog.service.ts';
import { findCustomer } from './customers.service.ts';
import { claimGrant, selectGrantByKey, storeGrantResult } from './resellers.repository.ts';

/** What a reseller hands a customer: tokens of a package it holds, or credit. */
export type GrantRequest =
  | { packageId: string; tokens?: bigint; note?: string }
  | { credits: bigint; note?: string };

export interface GrantResult {
  grantId: string;
  customerId: string;
  packageId: string | null;
  tokens: string;
  credits: string;
  entitlementId: string | null;
  expiresAt: string | null;
}

function requestHashOf(customerId: string, request: GrantRequest): string {
  const canonical =
    'credits' in request
      ? { customerId, credits: String(request.credits), note: request.note ?? null }
      : {
          customerId,
          packageId: request.packageId,
          tokens: request.tokens === undefined ? null : String(request.tokens),
          note: request.note ?? null,
        };
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex');
}

/**
 * A transfer from the reseller's own holdings to one of its customers, in one transaction: never
 * more than it holds (insufficient_tokens / insufficient_credits), a ledger row on both sides.
 * With an Idempotency-Key the same body answers the first result again and grants nothing more;
 * another body under the same key is validation_failed.
 */
export async function grantToCustomer(
  deps: Dependencies,
  actor: Actor,
  customerId: string,
  request: GrantRequest,
  idempotencyKey: string | null,
): Promise<{ result: GrantResult; replay: boolean }> {
  const customer = await findCustomer(deps.db, actor.accountId, customerId);
  const requestHash = requestHashOf(customer.id, request);
  // Without `tokens`, a package grant is one whole package as the catalogue defines it.
  const wholePackage =
    'packageId' in request && request.tokens === undefined
      ? await wholePackageTokens(deps, request.packageId)
      : 0n;
  const outcome = await deps.db.transaction().execute(async (trx) => {
    const claimed = await claimGrant(trx, {
      resellerId: actor.accountId,
      customerId: customer.id,
      idempotencyKey,
      requestHash,
    });
    if (!claimed) {
      const first = await selectGrantByKey(trx, actor.accountId, idempotencyKey as string);
      if (!first || first.request_hash !== requestHash || !first.result) {
        throw AppError.validation({
          'Idempotency-Key': ['This key was already used with a different request.'],
        });
      }
      return { result: first.result as GrantResult, replay: true };
    }
    // Both accounts, in id order, each lease recalled (R15, R18).
    await balancesIn(deps, trx).lock(actor.accountId, customer.id);
    const cause = `reseller ${actor.accountId} -> ${customer.id}${request.note ? `: ${request.note}` : ''}`;
    let result: GrantResult;
    if ('credits' in request) {
      await transferCredit(trx, { from: actor.accountId, to: customer.id, amount: request.credits, cause });
      result = {
        grantId: claimed.id,
        customerId: customer.id,
        packageId: null,
        tokens: '0',
        credits: String(request.credits),
        entitlementId: null,
        expiresAt: null,
      };
    } else {
      const tokens = request.tokens ?? wholePackage;
      const moved = await transferPackageTokens(trx, {
        from: actor.accountId,
        to: customer.id,
        packageId: request.packageId,
        tokens,
        now: deps.clock.now(),
        cause,
      });
      result = {
        grantId: claimed.id,
        customerId: customer.id,
        packageId: request.packageId,
        tokens: String(tokens),
        credits: '0',
        entitlementId: moved.entitlementId,
        expiresAt: moved.expiresAt?.toISOString() ?? null,
      };
    }
    await storeGrantResult(trx, claimed.id, result);
    await recordAudit(trx, actor, {
      action: 'reseller.grant',
      targetType: 'account',
      targetId: customer.id,
      detail: { ...result, note: request.note ?? null },
    });
    return { result, replay: false };
  });
  if (!outcome.replay) {
    await deps.events.publish({ type: 'account.changed', accountId: actor.accountId });
    await deps.events.publish({ type: 'account.changed', accountId: customer.id });
  }
  return outcome;
}

async function wholePackageTokens(deps: Dependencies, packageId: string): Promise<bigint> {
  try {
    return (await findPackage(deps, packageId)).tokens;
  } catch (error) {
    // A package unknown to the catalogue is one the reseller holds none of.
    if (error instanceof AppError && error.code === 'not_found') throw new AppError('insufficient_tokens');
    throw error;
  }
}
