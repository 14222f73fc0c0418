/** Fixtures of the billing tests: a catalogue, funded accounts and keys, the internal API. */
import { randomUUID } from 'node:crypto';
import {
  apiKeyDigest,
  type FinishBatchResponse,
  type FinishItem,
  type LimiterSettings,
  type ReserveBatchResponse,
  type ReserveItem,
  SERVICE_TOKEN_AUDIENCE,
  SERVICE_TOKEN_ISSUER,
} from '@tollgate/schemas';
import { SignJWT } from 'jose';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../src/db/schema.ts';
import { createAccount } from '../src/modules/accounts/accounts.service.ts';
import { createKey } from '../src/modules/api-keys/api-keys.service.ts';
import { leaseSplit, withLease } from '../src/modules/billing/balances.ts';
import { changeCredit, grantPackage } from '../src/modules/billing/billing.service.ts';
import { changeBalances } from '../src/modules/billing/engines.ts';
import { insertEntitlement } from '../src/modules/billing/ledger.repository.ts';
import { verifyLedger } from '../src/modules/billing/ledger-check.ts';
import type { SummaryGrouping, UsageSummaryDbRow } from '../src/modules/billing/reports.repository.ts';
import { priceColumns, syncCatalog } from '../src/modules/catalog/catalog.service.ts';
import { parseCatalog } from '../src/modules/catalog/catalog-file.ts';
import type { TestContext } from './context.ts';
import { balancesOf as balancesOfAccount } from './kit.ts';

export const TEST_CATALOG = `
credit: { currency: USD, value: "0.000001", top_up: { min: "5.00", max: "500.00" } }
providers:
  - { id: up-anthropic, kind: anthropic, base_url: "http://127.0.0.1:9/anthropic", credential: TOLLGATE_PROVIDER_UPSTREAM_KEY }
  - { id: up-openai, kind: openai, base_url: "http://127.0.0.1:9/v1" }
aliases:
  - { alias: priced, provider: up-openai, upstream_model: secret-upstream-model-a, protocols: [chat_completions, responses],
      price: { input: 2, output: 5 }, default_max_output_tokens: 100, max_output_tokens: 1000 }
  - { alias: tokens-only, provider: up-anthropic, upstream_model: secret-upstream-model-b, protocols: [messages, count_tokens],
      default_max_output_tokens: 100, max_output_tokens: 1000 }
  - { alias: hidden, provider: up-openai, upstream_model: secret-upstream-model-c, protocols: [chat_completions],
      published: false, price: { input: 1, output: 1 }, default_max_output_tokens: 10, max_output_tokens: 10 }
packages:
  - { id: small, name: Small, tokens: 1000, validity_days: 30, price: { amount: "500", currency: USD, exponent: 2 } }
  - { id: huge, name: Huge, tokens: "18014398509481984", price: { amount: "999999", currency: EUR, exponent: 2 } }
  - { id: exact, name: Exact, tokens: 7300, aliases: [tokens-only], max_output_tokens: 500, requests_per_minute: 60,
      concurrency: 3, price: { amount: "100", currency: USD, exponent: 2 } }
  - { id: secret-pack, name: Internal, tokens: 10, published: false, price: { amount: "0", currency: USD, exponent: 2 } }
`;

export async function seedCatalog(context: TestContext, text = TEST_CATALOG): Promise<void> {
  await syncCatalog(context.deps, parseCatalog(text, 'test', {}));
}

export interface FundedKey {
  accountId: string;
  email: string;
  keyId: string;
  secret: string;
  digest: string;
}

/** A new account with one key, funded with the given packages and credit. */
export async function createFundedKey(
  context: TestContext,
  funding: { packages?: string[]; credits?: bigint; scope?: string[] } = {},
): Promise<FundedKey> {
  const email = `billing-${randomUUID()}@example.test`;
  const account = await createAccount(context.deps.db, {
    email,
    passwordHash: 'not-used',
    displayName: null,
  });
  const { key, secret } = await createKey(context.deps, account.id, {
    name: 'test',
    scope: funding.scope ?? null,
  });
  for (const packageId of funding.packages ?? []) {
    await grantPackage(context.deps, { accountId: account.id, packageId, cause: 'test grant' });
  }
  if (funding.credits) {
    await changeCredit(context.deps, {
      accountId: account.id,
      amount: funding.credits,
      kind: 'grant',
      cause: 'test',
    });
  }
  return { accountId: account.id, email, keyId: key.id, secret, digest: apiKeyDigest(secret) };
}

export async function serviceToken(context: TestContext): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(SERVICE_TOKEN_ISSUER)
    .setAudience(SERVICE_TOKEN_AUDIENCE)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(new TextEncoder().encode(context.deps.config.internalTokenSecret));
}

/** The internal billing API over HTTP (in-process), as the gateway calls it. */
export function internalApi(context: TestContext) {
  let token: Promise<string> | undefined;
  async function call<T>(path: string, body?: unknown): Promise<{ status: number; body: T }> {
    token ??= serviceToken(context);
    const response = await context.internalApp.request(`/internal/v1${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${await token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as T };
  }
  return {
    call,
    reserve: (items: ReserveItem[], limiter?: LimiterSettings) =>
      call<ReserveBatchResponse>('/reservations', limiter ? { items, limiter } : { items }),
    finish: (items: FinishItem[]) => call<FinishBatchResponse>('/reservations/finish', { items }),
  };
}

/** Another key on the account of `key`, drawing from the same balances. */
export async function addKey(context: TestContext, key: FundedKey): Promise<FundedKey> {
  const { key: created, secret } = await createKey(context.deps, key.accountId, {
    name: 'another',
    scope: null,
  });
  return { ...key, keyId: created.id, secret, digest: apiKeyDigest(secret) };
}

export function reserveItem(key: FundedKey, alias: string, input: bigint, output: bigint): ReserveItem {
  return {
    reservationId: randomUUID(),
    keyDigest: key.digest,
    keyId: key.keyId,
    accountId: key.accountId,
    alias,
    surface: alias === 'tokens-only' ? 'messages' : 'chat_completions',
    estimate: { inputTokens: String(input), outputTokens: String(output) },
  };
}

export function settleItem(
  key: FundedKey,
  reservationId: string,
  alias: string,
  input: bigint,
  output: bigint,
  cache: { cacheRead?: bigint; cacheWrite?: bigint; cacheWrite1h?: bigint } = {},
): FinishItem {
  return {
    action: 'settle',
    reservationId,
    keyId: key.keyId,
    accountId: key.accountId,
    alias,
    surface: alias === 'tokens-only' ? 'messages' : 'chat_completions',
    httpStatus: 200,
    occurredAt: new Date().toISOString(),
    outcome: 'ok',
    usage: {
      inputTokens: String(input),
      outputTokens: String(output),
      ...(cache.cacheRead === undefined ? {} : { cacheReadTokens: String(cache.cacheRead) }),
      ...(cache.cacheWrite === undefined ? {} : { cacheWriteTokens: String(cache.cacheWrite) }),
      ...(cache.cacheWrite1h === undefined ? {} : { cacheWrite1hTokens: String(cache.cacheWrite1h) }),
    },
  };
}

export function endItem(
  key: FundedKey,
  reservationId: string,
  alias: string,
  action: 'release' | 'hold',
  outcome: FinishItem['outcome'],
): FinishItem {
  return {
    action,
    reservationId,
    keyId: key.keyId,
    accountId: key.accountId,
    alias,
    surface: alias === 'tokens-only' ? 'messages' : 'chat_completions',
    httpStatus: action === 'hold' ? 502 : 503,
    occurredAt: new Date().toISOString(),
    outcome,
  };
}

export function balancesOf(context: TestContext, accountId: string) {
  return balancesOfAccount(context.deps, accountId);
}

/** Fails the test with the violations if any balance disagrees with its ledger rows. */
export async function expectLedgerConsistent(context: TestContext): Promise<void> {
  const problems = await verifyLedger(context.deps.db);
  if (problems.length > 0) throw new Error(`ledger inconsistent:\n${problems.join('\n')}`);
}

/** The two engines every money rule is checked on: Postgres alone, and the hot tier (Redis + Postgres). */
export const ENGINES = [
  ['postgres', false],
  ['hot tier', true],
] as const;

/**
 * Grants an entitlement of any size, expiry and alias set, as a package grant does: under the
 * account's lock, the hot tier's lease recalled first (docs/billing/rules.md R15).
 */
export async function grantEntitlement(
  context: TestContext,
  accountId: string,
  grant: { tokens: bigint; expiresInMs?: number | null; aliases?: string[] | null; weighted?: boolean },
): Promise<string> {
  return changeBalances(context.deps, async ({ trx, lock }) => {
    await lock(accountId);
    return insertEntitlement(trx, {
      account_id: accountId,
      package_id: null,
      aliases: grant.aliases ?? null,
      granted: grant.tokens,
      expires_at:
        grant.expiresInMs === undefined || grant.expiresInMs === null
          ? null
          : new Date(context.deps.clock.now().getTime() + grant.expiresInMs),
      max_output_tokens: null,
      requests_per_minute: null,
      concurrency: null,
      cause: 'test grant',
      idempotency_key: null,
      weighted: grant.weighted ?? false,
    });
  });
}

/** Sets an alias's package rate (R2b) and tells the engines' catalogue caches. */
export async function setPackageRate(context: TestContext, alias: string, rate: bigint) {
  await context.deps.db
    .updateTable('model_aliases')
    .set({ package_rate: rate })
    .where('alias', '=', alias)
    .execute();
  await context.deps.events.publish({ type: 'catalog.changed' });
}

/** Ends an entitlement now, by Postgres's clock for expiries (tollgate_now()), as time passing would (R16). */
export async function expireEntitlement(context: TestContext, accountId: string, entitlementId: string) {
  await changeBalances(context.deps, async ({ trx, lock }) => {
    await lock(accountId);
    await sql`update entitlements set expires_at = tollgate_now() - interval '1 millisecond'
              where id = ${entitlementId}::uuid`.execute(trx);
  });
}

/** Each source's spendable and reserved figures (entitlement id, or 'credit'), a lease split back out. */
export async function sourcesOf(
  context: TestContext,
  accountId: string,
): Promise<Record<string, { remaining: bigint; reserved: bigint }>> {
  const split = await leaseSplit(context.deps, accountId);
  const rows = await context.deps.db
    .selectFrom('entitlements')
    .select(['id', 'remaining', 'reserved'])
    .where('account_id', '=', accountId)
    .execute();
  const credit = await context.deps.db
    .selectFrom('credit_balances')
    .select(['available', 'reserved'])
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  const sources: Record<string, { remaining: bigint; reserved: bigint }> = {};
  for (const row of rows) {
    sources[row.id] = withLease({ remaining: row.remaining, reserved: row.reserved }, split.get(row.id));
  }
  sources.credit = withLease(
    { remaining: credit?.available ?? 0n, reserved: credit?.reserved ?? 0n },
    split.get('c'),
  );
  return sources;
}

/**
 * What the ledger says each source spent on calls, per source ('credit' for credit): the sum of
 * `settle` amounts, and of `write_off` amounts by kind of quantity. Both engines write these the
 * same (their `reserve` and `release` rows differ: the hot tier's are a lease's).
 */
export async function spentOf(context: TestContext, accountId: string) {
  const rows = await context.deps.db
    .selectFrom('ledger_entries')
    .select(['entitlement_id', 'kind', 'cause', sql<string>`sum(amount)::text`.as('amount')])
    .where('account_id', '=', accountId)
    .where('kind', 'in', ['settle', 'write_off'])
    .groupBy(['entitlement_id', 'kind', 'cause'])
    .execute();
  const spent: Record<string, bigint> = {};
  for (const row of rows) {
    const name =
      row.kind === 'write_off'
        ? row.cause.includes('tokens')
          ? 'writeOff:tokens'
          : 'writeOff:credits'
        : (row.entitlement_id ?? 'credit');
    spent[name] = (spent[name] ?? 0n) + BigInt(row.amount);
  }
  // Postgres alone writes a settle row for a leg that charged nothing; the hot tier none.
  for (const [name, amount] of Object.entries(spent)) if (amount === 0n) delete spent[name];
  return spent;
}

/** Sets an alias's credit prices as a catalogue change does (the hot tier's cache drops at once). */
/** Sets an alias's prices; the parts not given as docs/pricing.md says (cache parts at the input price). */
export async function setPrice(
  context: TestContext,
  alias: string,
  input: bigint,
  output: bigint,
  parts: { cacheRead?: bigint; cacheWrite?: bigint; cacheWrite1h?: bigint; request?: bigint } = {},
) {
  await context.deps.db
    .updateTable('model_aliases')
    .set(priceColumns({ input, output, ...parts }))
    .where('alias', '=', alias)
    .execute();
  await context.deps.events.publish({ type: 'catalog.changed' });
}

/** The same summary straight from the reservations, without the rollup (what the rollup must agree with). */
export async function selectUsageSummaryLive(
  db: Kysely<Database>,
  accountId: string,
  from: Date,
  end: Date,
  by: SummaryGrouping = 'alias',
) {
  const name = by === 'key' ? sql`key_id::text` : sql`alias`;
  const result = await sql<UsageSummaryDbRow>`
    select to_char(date_trunc('day', created_at at time zone 'UTC'), 'YYYY-MM-DD') as day, ${name} as name,
           count(*)::int as requests,
           coalesce(sum(input_tokens), 0)::bigint as input_tokens,
           coalesce(sum(output_tokens), 0)::bigint as output_tokens,
           coalesce(sum(cache_read_tokens), 0)::bigint as cache_read_tokens,
           coalesce(sum(cache_write_tokens), 0)::bigint as cache_write_tokens,
           coalesce(sum(cache_write_1h_tokens), 0)::bigint as cache_write_1h_tokens,
           sum(charged_tokens)::bigint as charged_tokens,
           sum(charged_credits)::bigint as charged_credits
    from reservations
    where account_id = ${accountId}::uuid and status = 'settled'
      and created_at >= ${from} and created_at < ${end}
    group by 1, 2
    order by 1, 2
  `.execute(db);
  return result.rows;
}
