import { AppError } from '@tollgate/errors';
import type { Amounts } from '@tollgate/schemas';
import type { Dependencies } from '../../deps.ts';
import { leaseSplit, readAccountBalances, withLease } from './balances.ts';
import type { ReservationStatus } from './billing.table.ts';
import * as ledger from './ledger.repository.ts';
import * as reports from './reports.repository.ts';

/** What an account can spend and what requests in flight hold, as integer strings. */
export async function readBalance(deps: Dependencies, accountId: string) {
  const balances = await readAccountBalances(deps, accountId, { now: deps.clock.now() });
  return { remaining: balances.remaining, reserved: balances.reserved };
}

export async function listEntitlements(deps: Dependencies, accountId: string) {
  const now = deps.clock.now();
  const rows = await ledger.listEntitlements(deps.db, accountId);
  const split = await leaseSplit(deps, accountId);
  return rows.map((row) => ({
    id: row.id,
    packageId: row.package_id,
    granted: String(row.granted),
    ...mapAmounts(withLease(row, split.get(row.id))),
    expiresAt: row.expires_at?.toISOString() ?? null,
    expired: row.expires_at !== null && row.expires_at <= now,
    aliases: row.aliases,
    ceilings: {
      maxOutputTokens: row.max_output_tokens,
      requestsPerMinute: row.requests_per_minute,
      concurrency: row.concurrency,
    },
    createdAt: row.created_at.toISOString(),
  }));
}

export interface ActivityQuery {
  keyId?: string;
  limit: number;
  cursor?: string;
}

export interface ActivityItem {
  id: string;
  keyId: string;
  alias: string;
  surface: string;
  status: ReservationStatus;
  outcome: string | null;
  httpStatus: number | null;
  inputTokens: string | null;
  outputTokens: string | null;
  charged: Amounts;
  writtenOff: Amounts;
  createdAt: string;
  finishedAt: string | null;
}

/** createdAt: ISO time with microseconds, as Postgres keeps it. */
function encodeCursor(createdAt: string, id: string): string {
  return Buffer.from(`${createdAt}|${id}`).toString('base64url');
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const CURSOR_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

/** Postgres refuses 02-31 or 24:00 where Date would roll over into the next day. */
function isRealInstant(time: string): boolean {
  const date = new Date(time);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 19) === time.slice(0, 19);
}

function decodeCursor(cursor: string): { createdAt: string; id: string } {
  const [createdAt, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (!createdAt || !CURSOR_TIME.test(createdAt) || !isRealInstant(createdAt) || !id || !UUID.test(id)) {
    throw AppError.validation({ cursor: ['Not a cursor from a previous page.'] });
  }
  return { createdAt, id };
}

/**
 * The span of one key's calls around its recorded use (migration 0011): its last use is recorded
 * again only once an hour old; a batch that started just before another's first use committed
 * writes a created_at a moment earlier. The minute is generous and costs little.
 */
const LAST_USE_STALE_MS = 3_600_000;
const USE_MARGIN_MS = 60_000;

/** Each metered call, newest first, one page at a time; optionally one key's only. */
export async function listActivity(
  deps: Dependencies,
  accountId: string,
  query: ActivityQuery,
): Promise<{ items: ActivityItem[]; nextCursor: string | null }> {
  const after = query.cursor ? decodeCursor(query.cursor) : null;
  let span: { from: Date; to: Date } | null = null;
  if (query.keyId !== undefined) {
    const use = await ledger.selectKeyUse(deps.db, accountId, query.keyId);
    // A key never used, or not this account's, has no calls to list.
    if (use === null) return { items: [], nextCursor: null };
    span = {
      from: new Date(use.first.getTime() - USE_MARGIN_MS),
      to: new Date(use.last.getTime() + LAST_USE_STALE_MS + USE_MARGIN_MS),
    };
  }
  const rows = await ledger.selectActivityPage(deps.db, accountId, {
    keyId: query.keyId,
    span,
    after,
    limit: query.limit + 1,
  });
  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  return {
    items: page.map((row) => ({
      id: row.id,
      keyId: row.key_id,
      alias: row.alias,
      surface: row.surface,
      status: row.status,
      outcome: row.outcome,
      httpStatus: row.http_status,
      inputTokens: row.input_tokens === null ? null : String(row.input_tokens),
      outputTokens: row.output_tokens === null ? null : String(row.output_tokens),
      charged: { tokens: String(row.charged_tokens), credits: String(row.charged_credits) },
      writtenOff: { tokens: String(row.written_off_tokens), credits: String(row.written_off_credits) },
      createdAt: row.created_at.toISOString(),
      finishedAt: row.finished_at?.toISOString() ?? null,
    })),
    nextCursor: rows.length > query.limit && last ? encodeCursor(last.cursor_time, last.id) : null,
  };
}

/** An activity page with the upstream each call reached (admins only; docs/routing.md). */
export async function withRoutes(
  deps: Dependencies,
  page: { items: ActivityItem[]; nextCursor: string | null },
) {
  const ids = page.items.map((item) => item.id);
  const routes = new Map(
    ids.length === 0
      ? []
      : (
          await deps.db
            .selectFrom('reservation_routes')
            .selectAll()
            .where('reservation_id', 'in', ids)
            .execute()
        ).map((row) => [row.reservation_id, row]),
  );
  return {
    items: page.items.map((item) => {
      const route = routes.get(item.id);
      return {
        ...item,
        route: route
          ? { providerId: route.provider_id, upstreamModel: route.upstream_model, attempts: route.attempts }
          : null,
      };
    }),
    nextCursor: page.nextCursor,
  };
}

export interface UsageSummaryRow {
  day: string;
  /** Summarised by alias: the alias; by key: null. */
  alias: string | null;
  /** Summarised by key: the key; by alias: absent. */
  keyId?: string;
  requests: number;
  /** Input read neither from nor into a cache (calls settled before parts were kept: all input). */
  inputTokens: string;
  outputTokens: string;
  cacheReadTokens: string;
  cacheWriteTokens: string;
  cacheWrite1hTokens: string;
  charged: Amounts;
}

const MAX_SUMMARY_DAYS = 366;

/** Settled usage per day (in the account's timezone) and alias or key, for days in [from, to] (YYYY-MM-DD, inclusive). */
export async function summarizeUsage(
  deps: Dependencies,
  accountId: string,
  range: { from: string; to: string },
  by: reports.SummaryGrouping = 'alias',
): Promise<UsageSummaryRow[]> {
  const from = new Date(`${range.from}T00:00:00Z`);
  const to = new Date(`${range.to}T00:00:00Z`);
  if (to < from) throw AppError.validation({ to: ['Must not be before from.'] });
  if ((to.getTime() - from.getTime()) / 86_400_000 >= MAX_SUMMARY_DAYS) {
    throw AppError.validation({ to: [`The range may span at most ${MAX_SUMMARY_DAYS} days.`] });
  }
  const end = new Date(to.getTime() + 86_400_000).toISOString().slice(0, 10);
  const result = await reports.selectUsageSummary(deps.db, accountId, range.from, end, by);
  return result.rows.map((row) => ({
    day: row.day,
    ...(by === 'key' ? { alias: null, keyId: row.name } : { alias: row.name }),
    requests: row.requests,
    inputTokens: String(row.input_tokens),
    outputTokens: String(row.output_tokens),
    cacheReadTokens: String(row.cache_read_tokens),
    cacheWriteTokens: String(row.cache_write_tokens),
    cacheWrite1hTokens: String(row.cache_write_1h_tokens),
    charged: { tokens: String(row.charged_tokens), credits: String(row.charged_credits) },
  }));
}

export interface AccountFigures {
  balance: { remaining: Amounts; reserved: Amounts };
  /** What calls created since `since` (a UTC day's start) charged. */
  spent: { since: string; requests: string; credits: string; tokens: string };
  lastCallAt: string | null;
}

/**
 * Balance, spend over the last `days` UTC days (today included) and latest call of each account,
 * for a page of accounts (the operator's list): one query, then each account's hot-tier lease
 * split back out as readBalance does.
 */
export async function accountFigures(
  deps: Dependencies,
  accountIds: readonly string[],
  days: number,
): Promise<Map<string, AccountFigures>> {
  const now = deps.clock.now();
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const since = new Date(today - (days - 1) * 86_400_000);
  const [rows, splits] = await Promise.all([
    reports.selectAccountFigures(deps.db, accountIds, since, now),
    Promise.all(accountIds.map((id) => leaseSplit(deps, id))),
  ]);
  const splitOf = new Map(accountIds.map((id, index) => [id, splits[index]!]));
  const figures = new Map<string, AccountFigures>();
  for (const row of rows) {
    const split = splitOf.get(row.account_id)!;
    let tokens = { remaining: BigInt(row.tokens_remaining), reserved: BigInt(row.tokens_reserved) };
    // The lease's part of each unexpired entitlement summed, as readAccountBalances does.
    for (const id of row.entitlement_ids) {
      const part = split.get(id);
      if (part) tokens = withLease(tokens, part);
    }
    const credits = withLease(
      { remaining: BigInt(row.credits_available), reserved: BigInt(row.credits_reserved) },
      split.get('c'),
    );
    figures.set(row.account_id, {
      balance: {
        remaining: { tokens: String(tokens.remaining), credits: String(credits.remaining) },
        reserved: { tokens: String(tokens.reserved), credits: String(credits.reserved) },
      },
      spent: {
        since: since.toISOString().slice(0, 10),
        requests: row.spent_requests,
        credits: row.spent_credits,
        tokens: row.spent_tokens,
      },
      lastCallAt: row.last_call_at?.toISOString() ?? null,
    });
  }
  return figures;
}

export interface UsageTotalsRow {
  day: string | null;
  accountId: string | null;
  email: string | null;
  keyId: string | null;
  keyName: string | null;
  requests: string;
  inputTokens: string;
  outputTokens: string;
  charged: Amounts;
}

/**
 * The operator's usage report for days in [from, to] (YYYY-MM-DD, inclusive): per day (across
 * accounts, or of one), per account, or per key of one account.
 */
export async function reportUsageTotals(
  deps: Dependencies,
  range: { from: string; to: string },
  options: { by: reports.TotalsGrouping; accountId: string | null; limit: number },
): Promise<UsageTotalsRow[]> {
  const from = new Date(`${range.from}T00:00:00Z`);
  const to = new Date(`${range.to}T00:00:00Z`);
  if (to < from) throw AppError.validation({ to: ['Must not be before from.'] });
  if ((to.getTime() - from.getTime()) / 86_400_000 >= MAX_SUMMARY_DAYS) {
    throw AppError.validation({ to: [`The range may span at most ${MAX_SUMMARY_DAYS} days.`] });
  }
  if (options.by === 'key' && options.accountId === null) {
    throw AppError.validation({ accountId: ['Name the account whose keys to report.'] });
  }
  const end = new Date(to.getTime() + 86_400_000).toISOString().slice(0, 10);
  const rows = await reports.selectUsageTotals(deps.db, { from: range.from, end, ...options });
  return rows.map((row) => ({
    day: row.day,
    accountId: row.account_id,
    email: row.email,
    keyId: row.key_id,
    keyName: row.key_name,
    requests: row.requests,
    inputTokens: row.input_tokens,
    outputTokens: row.output_tokens,
    charged: { tokens: row.charged_tokens, credits: row.charged_credits },
  }));
}

function mapAmounts(figures: { remaining: bigint; reserved: bigint }) {
  return { remaining: String(figures.remaining), reserved: String(figures.reserved) };
}
