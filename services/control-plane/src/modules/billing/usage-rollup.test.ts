import { randomUUID } from 'node:crypto';
import type { FinishItem } from '@tollgate/schemas';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addKey,
  createFundedKey,
  type FundedKey,
  internalApi,
  reserveItem,
  seedCatalog,
  selectUsageSummaryLive,
  settleItem,
} from '../../../test/billing.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import * as engine from './engine.repository.ts';
import { summarizeUsage } from './reports.service.ts';
import { advanceUsageRollupOnce } from './usage-rollup.ts';

let context: TestContext;
let api: ReturnType<typeof internalApi>;

beforeAll(async () => {
  // No lag: a pass rolls up everything settled before it (and before any open transaction).
  context = await createTestContext('usage-rollup', { USAGE_ROLLUP_LAG_SECONDS: '0' });
  await seedCatalog(context);
  api = internalApi(context);
});
afterAll(async () => {
  await context.close();
});

const DAY = 86_400_000;
const isoDay = (offset: number) => new Date(Date.now() - offset * DAY).toISOString().slice(0, 10);
const RANGE = { from: isoDay(10), to: isoDay(0) };

/** The summary as the live aggregate over reservations answers it (the query before the rollup). */
async function liveSummary(accountId: string, by: 'alias' | 'key') {
  const rows = await selectUsageSummaryLive(
    context.deps.db,
    accountId,
    new Date(`${RANGE.from}T00:00:00Z`),
    new Date(new Date(`${RANGE.to}T00:00:00Z`).getTime() + DAY),
    by,
  );
  return rows.map((row) => ({
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

async function expectSummaryEqualsLive(accountId: string, by: 'alias' | 'key' = 'alias') {
  const summary = await summarizeUsage(context.deps, accountId, RANGE, by);
  expect(summary).toEqual(await liveSummary(accountId, by));
  return summary;
}

const NO_CACHE = { cacheReadTokens: '0', cacheWriteTokens: '0', cacheWrite1hTokens: '0' };

async function reserve(key: FundedKey, alias: string) {
  const item = reserveItem(key, alias, 100n, 100n);
  const reserved = await api.reserve([item]);
  expect(reserved.body.results[0]?.ok).toBe(true);
  return item.reservationId;
}

async function settle(key: FundedKey, reservationId: string, alias: string, input: bigint, output: bigint) {
  const finished = await api.finish([settleItem(key, reservationId, alias, input, output)]);
  expect(finished.body.results[0]?.status).toBe('settled');
}

/** A settle the gateway reports for a reservation the control plane never saw, `daysAgo` old. */
function lateSettle(
  key: FundedKey,
  alias: string,
  daysAgo: number,
  input: bigint,
  output: bigint,
): FinishItem {
  return {
    ...settleItem(key, randomUUID(), alias, input, output),
    occurredAt: new Date(Date.now() - daysAgo * DAY).toISOString(),
  };
}

async function rolledUpRows(accountId: string) {
  const { rows } = await sql<{ requests: string }>`
    select coalesce(sum(requests), 0)::text as requests from usage_daily where account_id = ${accountId}::uuid
  `.execute(context.deps.db);
  return Number(rows[0]!.requests);
}

describe('usage summary from the rollup', () => {
  it('answers exactly what the live aggregate answers, before and after each pass, late settlements included', async () => {
    const key = await createFundedKey(context, { packages: ['small'], credits: 1_000_000n });
    // Before any pass of this test: settled today, settled 2 days back (created then), open,
    // released, held.
    await settle(key, await reserve(key, 'priced'), 'priced', 40n, 30n);
    await api.finish([lateSettle(key, 'priced', 2, 11n, 12n)]);
    const openBeforePass = await reserve(key, 'tokens-only');
    const released = await reserve(key, 'priced');
    await api.finish([
      { ...settleItem(key, released, 'priced', 0n, 0n), action: 'release', outcome: 'upstream_unavailable' },
    ]);
    const held = await reserve(key, 'priced');
    await api.finish([
      { ...settleItem(key, held, 'priced', 0n, 0n), action: 'hold', outcome: 'client_disconnected' },
    ]);

    const first = await advanceUsageRollupOnce(context.deps);
    expect(first.calls).toBeGreaterThanOrEqual(2);
    expect(await rolledUpRows(key.accountId)).toBe(2);
    expect(await expectSummaryEqualsLive(key.accountId)).toEqual([
      {
        day: isoDay(2),
        alias: 'priced',
        requests: 1,
        inputTokens: '11',
        outputTokens: '12',
        ...NO_CACHE,
        charged: { tokens: '23', credits: '0' },
      },
      {
        day: isoDay(0),
        alias: 'priced',
        requests: 1,
        inputTokens: '40',
        outputTokens: '30',
        ...NO_CACHE,
        charged: { tokens: '70', credits: '0' },
      },
    ]);

    // After the pass: the open reservation (created before the watermark) and the held one settle
    // now, one call is new, and a late settle lands on a day the rollup already holds.
    await settle(key, openBeforePass, 'tokens-only', 5n, 6n);
    await settle(key, held, 'priced', 7n, 8n);
    await settle(key, await reserve(key, 'priced'), 'priced', 1n, 2n);
    await api.finish([lateSettle(key, 'priced', 2, 100n, 200n)]);
    await api.finish([lateSettle(key, 'tokens-only', 9, 3n, 4n)]);
    // Not in the rollup yet, but in the summary.
    expect(await rolledUpRows(key.accountId)).toBe(2);
    const between = await expectSummaryEqualsLive(key.accountId);
    expect(between.find((row) => row.day === isoDay(2))).toMatchObject({ requests: 2, inputTokens: '111' });
    expect(between.find((row) => row.day === isoDay(9))).toMatchObject({ alias: 'tokens-only', requests: 1 });

    await advanceUsageRollupOnce(context.deps);
    expect(await rolledUpRows(key.accountId)).toBe(7);
    expect(await expectSummaryEqualsLive(key.accountId)).toEqual(between);

    // A pass with nothing new counts nothing twice.
    await advanceUsageRollupOnce(context.deps);
    expect(await rolledUpRows(key.accountId)).toBe(7);
    expect(await expectSummaryEqualsLive(key.accountId)).toEqual(between);
  });

  it('sums each usage part per alias and per key, before and after a pass', async () => {
    const first = await createFundedKey(context, { credits: 1_000_000n });
    const second = await addKey(context, first);
    for (const [key, read] of [
      [first, 100n],
      [first, 50n],
      [second, 7n],
    ] as const) {
      const id = await reserve(key, 'priced');
      const parts = { cacheRead: read, cacheWrite: 3n, cacheWrite1h: 2n };
      const finished = await api.finish([settleItem(key, id, 'priced', 10n, 5n, parts)]);
      expect(finished.body.results[0]?.status).toBe('settled');
    }
    const byKey = await expectSummaryEqualsLive(first.accountId, 'key');
    expect(byKey.map(({ charged: _charged, ...row }) => row)).toEqual(
      [
        {
          keyId: first.keyId,
          requests: 2,
          cacheReadTokens: '150',
          cacheWriteTokens: '6',
          cacheWrite1hTokens: '4',
        },
        {
          keyId: second.keyId,
          requests: 1,
          cacheReadTokens: '7',
          cacheWriteTokens: '3',
          cacheWrite1hTokens: '2',
        },
      ]
        .sort((a, b) => a.keyId.localeCompare(b.keyId))
        .map((row) => ({
          day: isoDay(0),
          alias: null,
          inputTokens: String(10 * row.requests),
          outputTokens: String(5 * row.requests),
          ...row,
        })),
    );
    const byAlias = await expectSummaryEqualsLive(first.accountId);
    expect(byAlias).toMatchObject([
      { alias: 'priced', requests: 3, inputTokens: '30', cacheReadTokens: '157' },
    ]);
    await advanceUsageRollupOnce(context.deps);
    expect(await expectSummaryEqualsLive(first.accountId, 'key')).toEqual(byKey);
    expect(await expectSummaryEqualsLive(first.accountId)).toEqual(byAlias);
  });

  it('never moves the watermark past a settlement that commits after the pass', async () => {
    const key = await createFundedKey(context, { credits: 1_000_000n });
    const reservationId = await reserve(key, 'priced');
    const row = {
      ...engine.finishRowOf(
        {
          id: reservationId,
          key_id: key.keyId,
          account_id: key.accountId,
          alias: 'priced',
          surface: 'chat_completions',
        },
        'settle',
        'ok',
        new Date().toISOString(),
      ),
      input_tokens: '9',
      output_tokens: '10',
    };
    await context.deps.db.connection().execute(async (connection) => {
      await sql`begin`.execute(connection);
      // The settle's finished_at is this transaction's start, which the pass below must not pass.
      await sql`select tollgate_finish(${JSON.stringify([row])}::jsonb)`.execute(connection);
      const pass = await advanceUsageRollupOnce(context.deps);
      const { rows } = await sql<{ finished_at: Date }>`
        select finished_at from reservations where id = ${reservationId}::uuid
      `.execute(connection);
      expect(pass.to!.getTime()).toBeLessThanOrEqual(rows[0]!.finished_at.getTime());
      await sql`commit`.execute(connection);
    });
    const summary = await expectSummaryEqualsLive(key.accountId);
    expect(summary).toEqual([
      {
        day: isoDay(0),
        alias: 'priced',
        requests: 1,
        inputTokens: '9',
        outputTokens: '10',
        ...NO_CACHE,
        charged: { tokens: '0', credits: '68' },
      },
    ]);
    await advanceUsageRollupOnce(context.deps);
    expect(await rolledUpRows(key.accountId)).toBe(1);
    expect(await expectSummaryEqualsLive(key.accountId)).toEqual(summary);
  });
});
