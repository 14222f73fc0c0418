import { AppError } from '@tollgate/errors';
import { QUANTITY_MAX } from '@tollgate/schemas';
import type { Dependencies } from '../../deps.ts';
import { readBalance } from '../billing/reports.service.ts';
import { readCreditSettings } from '../catalog/catalog.service.ts';
import { insertTopUpOrder, topUpCredits } from '../orders/orders.service.ts';
import { chargeSavedCard } from '../payments/payment-flows.service.ts';
import * as repository from './top-ups.repository.ts';

/**
 * Automatic top-up (docs/payments.md#auto-top-up, docs/decisions/auto-top-up-crossing.md).
 *
 * After a settlement, the control plane that settled looks at the account's balance (credits held:
 * spendable plus reserved, which calls only ever lower). Below the threshold while armed, it ends
 * the armed state (generation g) with a guarded update that exactly one caller wins, creates the
 * order for (account, g) in the same transaction (unique, the second guard) and charges the saved
 * card with the order as Stripe's idempotency key. A later settlement that finds the balance back
 * at or above the threshold arms it again as generation g + 1. The row is read before the balance,
 * so a check that read the balance before a top-up's grant can no longer win a generation that
 * was re-armed after it.
 */

/** How long the list of accounts with automatic top-up on is reused (one query, any number of calls). */
const ENABLED_CACHE_MS = 2_000;

interface Watcher {
  refresh(): void;
}
const watchers = new WeakMap<Dependencies, Watcher>();

/** Starts watching settlements for automatic top-ups (server start, and test contexts). */
export function watchAutoTopUps(deps: Dependencies): void {
  let enabled: { ids: Promise<Set<string>>; at: number } | null = null;
  const running = new Map<string, { again: boolean }>();

  function enabledAccounts(): Promise<Set<string>> {
    const now = performance.now();
    if (!enabled || now - enabled.at > ENABLED_CACHE_MS) {
      const ids = repository.listEnabledAccounts(deps.db).then((list) => new Set(list));
      enabled = { ids, at: now };
      ids.catch(() => {
        enabled = null;
      });
    }
    return enabled.ids;
  }

  // One check at a time per account in this process; settlements meanwhile ask for one more.
  function run(accountId: string): void {
    const current = running.get(accountId);
    if (current) {
      current.again = true;
      return;
    }
    const state = { again: false };
    running.set(accountId, state);
    void (async () => {
      try {
        do {
          state.again = false;
          await checkAutoTopUp(deps, accountId);
        } while (state.again);
      } catch (error) {
        deps.logger.warn({ err: error, accountId }, 'automatic top-up check failed');
      } finally {
        running.delete(accountId);
      }
    })();
  }

  deps.settled.listen((accountIds) => {
    enabledAccounts()
      .then((ids) => {
        for (const accountId of accountIds) if (ids.has(accountId)) run(accountId);
      })
      .catch((error) => deps.logger.warn({ err: error }, 'automatic top-up accounts not read'));
  });
  watchers.set(deps, {
    refresh() {
      enabled = null;
    },
  });
}

export type CheckOutcome = 'off' | 'above' | 'rearmed' | 'waiting' | 'lost' | 'charged' | 'failed';

/** One look at an account after its calls settled; safe to run any number of times at once. */
export async function checkAutoTopUp(deps: Dependencies, accountId: string): Promise<CheckOutcome> {
  // The row first, then the balance (see above).
  const row = await repository.findAutoTopUp(deps.db, accountId);
  if (!row?.enabled) return 'off';
  const balance = await readBalance(deps, accountId);
  const held = BigInt(balance.remaining.credits) + BigInt(balance.reserved.credits);
  if (held >= row.threshold) {
    if (row.armed) return 'above';
    await repository.rearm(deps.db, accountId, row.generation);
    return 'rearmed';
  }
  // Disarmed: this crossing's top-up is on its way (or failed, and waits for the balance to rise).
  if (!row.armed || !row.payment_method || !row.stripe_customer) return 'waiting';
  const settings = await readCreditSettings(deps);
  let credits: bigint;
  try {
    credits = topUpCredits(settings, row.amount);
  } catch {
    await repository.recordFailure(deps.db, accountId, 'The amount is outside the top-up bounds now.');
    return 'failed';
  }
  if (held + credits > QUANTITY_MAX) return 'failed';
  const order = await deps.db.transaction().execute(async (trx) => {
    if (!(await repository.disarm(trx, accountId, row.generation))) return null;
    return insertTopUpOrder(deps, trx, {
      accountId,
      provider: 'stripe',
      amount: row.amount,
      credits,
      settings: settings!,
      savePaymentMethod: false,
      autoTopUpGeneration: row.generation,
    });
  });
  if (!order) return 'lost';
  deps.logger.info(
    { accountId, orderId: order.id, generation: String(row.generation) },
    'balance below the automatic top-up threshold: charging the saved card',
  );
  try {
    const outcome = await chargeSavedCard(deps, order.id, {
      customer: row.stripe_customer,
      paymentMethod: row.payment_method,
    });
    if (outcome === 'failed' || outcome === 'mismatch') {
      await repository.recordFailure(deps.db, accountId, 'The saved card was declined.');
      return 'failed';
    }
    return 'charged';
  } catch (error) {
    deps.logger.warn({ err: error, accountId, orderId: order.id }, 'automatic top-up not charged');
    await repository.recordFailure(
      deps.db,
      accountId,
      'The saved card could not be charged: the payment provider could not be reached.',
    );
    return 'failed';
  }
}

export interface AutoTopUpView {
  enabled: boolean;
  threshold: string;
  amount: { amount: string; currency: string; exponent: number } | null;
  cardSaved: boolean;
  armed: boolean;
  lastFailure: string | null;
}

export async function readAutoTopUp(deps: Dependencies, accountId: string): Promise<AutoTopUpView> {
  const row = await repository.findAutoTopUp(deps.db, accountId);
  if (!row)
    return {
      enabled: false,
      threshold: '0',
      amount: null,
      cardSaved: false,
      armed: false,
      lastFailure: null,
    };
  return {
    enabled: row.enabled,
    threshold: String(row.threshold),
    amount: { amount: String(row.amount), currency: row.currency, exponent: row.exponent },
    cardSaved: row.payment_method !== null,
    armed: row.armed,
    lastFailure: row.last_failure,
  };
}

/** Turns automatic top-up on or off; the amount must be a top-up within the catalogue's bounds. */
export async function putAutoTopUp(
  deps: Dependencies,
  accountId: string,
  input: { enabled: boolean; threshold: bigint; amount: bigint },
): Promise<AutoTopUpView> {
  const settings = await readCreditSettings(deps);
  topUpCredits(settings, input.amount);
  if (!deps.config.commerce.providers.includes('stripe'))
    throw AppError.validation({ enabled: ['Automatic top-up needs the Stripe payment provider.'] });
  const row = await repository.findAutoTopUp(deps.db, accountId);
  if (!row?.payment_method && input.enabled)
    throw AppError.validation({
      enabled: ['Keep a card first: top up through Stripe with "keep this card for automatic top-ups".'],
    });
  if (row)
    await repository.putSettings(deps.db, accountId, {
      ...input,
      currency: settings!.currency,
      exponent: settings!.exponent,
    });
  watchers.get(deps)?.refresh();
  return readAutoTopUp(deps, accountId);
}

/** Forgets the saved card; automatic top-up is off until a card is kept again. */
export async function forgetAutoTopUpCard(deps: Dependencies, accountId: string): Promise<AutoTopUpView> {
  await repository.forgetCard(deps.db, accountId);
  watchers.get(deps)?.refresh();
  return readAutoTopUp(deps, accountId);
}
