import { AppError } from '@tollgate/errors';
import type { Dependencies } from '../../deps.ts';
import { type Actor, recordAudit } from '../audit/audit.service.ts';
import { recountAccountUsage } from '../billing/reports.repository.ts';
import {
  type AccountCaps,
  type CapCounts,
  type CapParty,
  type CapUnit,
  capsOfKey,
  countedFor,
  countsSince,
  loadAccountCaps,
  type SpendCap,
} from './spend-caps.counting.ts';
import { selectCapsOfAccounts, upsertTimeZone, writeCap } from './spend-caps.repository.ts';
import { type CapPeriod, capWindow, checkCap, isValidTimeZone } from './windows.ts';

const RANK: Record<CapParty, number> = { customer: 0, reseller: 1, admin: 2 };

export interface CapStatus {
  id: string;
  keyId: string | null;
  setBy: CapParty;
  unit: CapUnit;
  period: CapPeriod;
  timeZone: string;
  limit: bigint;
  used: bigint;
  remaining: bigint;
  windowStart: Date;
  /** Calendar: the end of the window. Rolling: when the oldest call counted now leaves it (null: none counted). */
  resetsAt: Date | null;
}

/** Where each cap stands at `now`, given the account's counted calls. */
export function statusOf(
  account: AccountCaps,
  caps: readonly SpendCap[],
  counts: CapCounts,
  now: number,
): CapStatus[] {
  return caps.map((cap) => {
    const window = capWindow(cap.period, account.timeZone, now);
    const counted = countedFor(cap, counts, window).filter(
      (call) => call.at >= window.start && (window.end === null || call.at < window.end),
    );
    const { used } = checkCap(cap.period, window, cap.limit, counted, 0n);
    const oldest = counted
      .filter((call) => call.amount > 0n)
      .reduce((min, call) => Math.min(min, call.at), Infinity);
    const resetsAt = window.end ?? (oldest === Infinity ? null : oldest + 5 * 3_600_000);
    return {
      id: cap.id,
      keyId: cap.keyId,
      setBy: cap.setBy,
      unit: cap.unit,
      period: cap.period,
      timeZone: account.timeZone,
      limit: cap.limit,
      used,
      remaining: used >= cap.limit ? 0n : cap.limit - used,
      windowStart: new Date(window.start),
      resetsAt: resetsAt === null ? null : new Date(resetsAt),
    };
  });
}

/** What the account's calls counted (see countsSince), from whichever engine counts them. */
export function readEngineCounts(
  deps: Pick<Dependencies, 'billing'>,
  accountId: string,
  since: { callsSince: number | null; countersSince: number },
): Promise<CapCounts> {
  return deps.billing.capCounts(accountId, since);
}

/** Caps of an account (every one, or those that bound one key) with what each has used. */
export async function readCapStatus(
  deps: Pick<Dependencies, 'db' | 'billing' | 'clock'>,
  accountId: string,
  keyId?: string,
): Promise<{ timeZone: string; caps: CapStatus[] }> {
  const account = (await loadAccountCaps(deps.db, [accountId])).get(accountId) as AccountCaps;
  const caps = keyId ? capsOfKey(account, keyId) : account.caps;
  const now = deps.clock.now().getTime();
  const counts =
    caps.length === 0
      ? { calls: [], counters: [] }
      : await readEngineCounts(deps, accountId, countsSince(caps, account.timeZone, now));
  const order = (cap: CapStatus) =>
    `${cap.keyId ?? ''}|${CAP_ORDER.indexOf(cap.period)}|${cap.unit}|${RANK[cap.setBy]}`;
  return {
    timeZone: account.timeZone,
    caps: statusOf(account, caps, counts, now).sort((a, b) => order(a).localeCompare(order(b))),
  };
}
const CAP_ORDER: readonly CapPeriod[] = ['5h', 'day', 'week', 'month'];

export interface CapChange {
  unit: CapUnit;
  period: CapPeriod;
  /** Null removes this party's cap. */
  limit: bigint | null;
}

/**
 * Sets (or removes) one party's cap on an account or one of its keys. A party may not set a cap
 * above one of the same unit and period that a higher party set on the same key or on the account
 * (the operator's caps bound the customer's as its maxima bound key ceilings). The caller has
 * checked that the party may act on the account and that the key is the account's.
 */
export async function setSpendCap(
  deps: Pick<Dependencies, 'db' | 'clock' | 'caps' | 'billing'>,
  actor: Actor,
  party: CapParty,
  target: { accountId: string; keyId: string | null },
  change: CapChange,
): Promise<void> {
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    const { caps } = await selectCapsOfAccounts(trx, [target.accountId]);
    if (change.limit !== null) {
      const bound = caps
        .filter(
          (cap) =>
            RANK[cap.set_by] > RANK[party] &&
            cap.unit === change.unit &&
            cap.period === change.period &&
            (cap.key_id === null || cap.key_id === target.keyId),
        )
        .reduce<bigint | null>((min, cap) => (min === null || cap.amount < min ? cap.amount : min), null);
      if (bound !== null && change.limit > bound) {
        throw AppError.validation({ limit: [`At most ${bound} for this account.`] });
      }
    }
    await writeCap(
      trx,
      {
        account_id: target.accountId,
        key_id: target.keyId,
        set_by: party,
        unit: change.unit,
        period: change.period,
      },
      change.limit,
      now,
    );
    await recordAudit(trx, actor, {
      action: change.limit === null ? 'spend_cap.removed' : 'spend_cap.set',
      targetType: target.keyId ? 'api_key' : 'account',
      targetId: target.keyId ?? target.accountId,
      detail: {
        accountId: target.accountId,
        setBy: party,
        unit: change.unit,
        period: change.period,
        limit: change.limit?.toString() ?? null,
      },
    });
  });
  deps.caps.forget(target.accountId);
}

/** The account's timezone for calendar cap windows: an IANA name. */
export async function setCapTimeZone(
  deps: Pick<Dependencies, 'db' | 'clock' | 'caps'>,
  accountId: string,
  timeZone: string,
): Promise<void> {
  if (!isValidTimeZone(timeZone)) {
    throw AppError.validation({ timeZone: ['Use an IANA timezone name, e.g. Europe/Paris.'] });
  }
  await deps.db.transaction().execute(async (trx) => {
    await upsertTimeZone(trx, accountId, timeZone, deps.clock.now());
    // Usage reports count days in this timezone too: the days already rolled up are counted again.
    await recountAccountUsage(trx, accountId);
  });
  deps.caps.forget(accountId);
}
