import { AppError, type FieldErrors } from '@tollgate/errors';
import type { KeyLimits } from '@tollgate/schemas';
import type { Dependencies } from '../../deps.ts';
import { findAccountById } from '../accounts/accounts.service.ts';
import { readPlanCeilings } from '../billing/plan-ceilings.ts';
import { listCatalogAliases } from '../catalog/catalog.service.ts';
import {
  clampKeysOfAccount,
  selectAccountKeyLimits,
  upsertAccountKeyLimits,
} from './key-limits.repository.ts';

type LimitsDeps = Pick<Dependencies, 'db' | 'clock' | 'config'>;
const FIELDS = ['maxRequestBytes', 'maxOutputTokens', 'requestsPerMinute', 'concurrency'] as const;

/** What an admin sets for one account: a number, or null for the configured default. */
export type AccountKeyLimitsChange = Partial<Record<(typeof FIELDS)[number], number | null>>;

export interface KeyMaxima {
  /** The account's own maxima (admin-set, else the configured defaults). */
  account: KeyLimits;
  /** What a key of this account may have now: the account's maxima within its plans' rate and concurrency ceilings. */
  effective: KeyLimits;
  /**
   * What a new key gets for a ceiling left empty: the plan's rate and concurrency when the account's
   * packages set them (a key of a 600/min package gets 600/min), else the configured default; never
   * above the effective maximum.
   */
  defaults: KeyLimits;
}

/** The most a customer may give a key of this account, per ceiling. */
export async function readKeyMaxima(deps: LimitsDeps, accountId: string): Promise<KeyMaxima> {
  const row = await selectAccountKeyLimits(deps.db, accountId);
  const account: KeyLimits = {
    maxRequestBytes: row?.max_request_bytes ?? deps.config.keyMaxima.maxRequestBytes,
    maxOutputTokens: row?.max_output_tokens ?? deps.config.keyMaxima.maxOutputTokens,
    requestsPerMinute: row?.requests_per_minute ?? deps.config.keyMaxima.requestsPerMinute,
    concurrency: row?.concurrency ?? deps.config.keyMaxima.concurrency,
  };
  const plans = await readPlanCeilings(deps.db, accountId, deps.clock.now());
  const within = (maximum: number, plan: number | null) =>
    plan === null ? maximum : Math.min(maximum, plan);
  const effective: KeyLimits = {
    maxRequestBytes: account.maxRequestBytes,
    // A plan's output ceiling clamps each request (docs/behaviour.md, gateway rule 4), so it
    // does not bound keys.
    maxOutputTokens: account.maxOutputTokens,
    requestsPerMinute: within(account.requestsPerMinute, plans.requestsPerMinute),
    concurrency: within(account.concurrency, plans.concurrency),
  };
  const configured = deps.config.keyDefaults;
  const defaults = {} as KeyLimits;
  for (const field of FIELDS) defaults[field] = Math.min(configured[field], effective[field]);
  if (plans.requestsPerMinute !== null) defaults.requestsPerMinute = effective.requestsPerMinute;
  if (plans.concurrency !== null) defaults.concurrency = effective.concurrency;
  return { account, effective, defaults };
}

/**
 * A new key's ceilings: what the customer asked, each at most the account's effective maximum
 * (over it: validation_failed naming the field); a ceiling not asked takes the account's default.
 */
export async function chooseKeyLimits(
  deps: LimitsDeps,
  accountId: string,
  asked: Partial<KeyLimits>,
): Promise<KeyLimits> {
  const { effective, defaults } = await readKeyMaxima(deps, accountId);
  const errors: FieldErrors = {};
  const chosen = {} as KeyLimits;
  for (const field of FIELDS) {
    const value = asked[field];
    if (value !== undefined && value > effective[field]) {
      errors[`limits.${field}`] = [`At most ${effective[field]} for this account.`];
    }
    chosen[field] = value ?? defaults[field];
  }
  if (Object.keys(errors).length > 0) throw AppError.validation(errors);
  return chosen;
}

/** Refuses a scope naming aliases the catalogue does not publish (field errors name them). */
export async function checkScopeAliases(
  deps: Pick<Dependencies, 'db'>,
  scope: readonly string[] | null | undefined,
  options: { allowUnpublished?: boolean } = {},
): Promise<void> {
  if (!scope || scope.length === 0) return;
  const known = new Set(
    (await listCatalogAliases(deps.db))
      .filter((alias) => alias.published || options.allowUnpublished)
      .map((alias) => alias.alias),
  );
  const unknown = [...new Set(scope)].filter((alias) => !known.has(alias));
  if (unknown.length > 0) {
    throw AppError.validation({ scope: unknown.map((alias) => `Unknown model alias: ${alias}.`) });
  }
}

/**
 * Admin: sets an account's key maxima (null = back to the configured default) and lowers the
 * ceilings of its existing keys to them in the same transaction; the gateway drops the lowered
 * keys from its cache on their key.changed events.
 */
export async function setAccountKeyLimits(
  deps: LimitsDeps & Pick<Dependencies, 'events'>,
  accountId: string,
  change: AccountKeyLimitsChange,
): Promise<{ maxima: KeyMaxima; loweredKeyIds: string[] }> {
  if (!(await findAccountById(deps.db, accountId))) throw new AppError('not_found');
  const now = deps.clock.now();
  const loweredKeyIds = await deps.db.transaction().execute(async (trx) => {
    const current = await selectAccountKeyLimits(trx, accountId);
    const pick = (field: (typeof FIELDS)[number], column: keyof NonNullable<typeof current>) =>
      change[field] !== undefined ? (change[field] ?? null) : ((current?.[column] as number | null) ?? null);
    const row = {
      account_id: accountId,
      max_request_bytes: pick('maxRequestBytes', 'max_request_bytes'),
      max_output_tokens: pick('maxOutputTokens', 'max_output_tokens'),
      requests_per_minute: pick('requestsPerMinute', 'requests_per_minute'),
      concurrency: pick('concurrency', 'concurrency'),
    };
    await upsertAccountKeyLimits(trx, row, now);
    const maxima = deps.config.keyMaxima;
    return clampKeysOfAccount(
      trx,
      accountId,
      {
        maxRequestBytes: row.max_request_bytes ?? maxima.maxRequestBytes,
        maxOutputTokens: row.max_output_tokens ?? maxima.maxOutputTokens,
        requestsPerMinute: row.requests_per_minute ?? maxima.requestsPerMinute,
        concurrency: row.concurrency ?? maxima.concurrency,
      },
      now,
    );
  });
  for (const keyId of loweredKeyIds) await deps.events.publish({ type: 'key.changed', keyId });
  return { maxima: await readKeyMaxima(deps, accountId), loweredKeyIds };
}
