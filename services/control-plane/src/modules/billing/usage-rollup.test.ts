import { randomUUID } from 'node:crypto';
import type { FinishItem } from '@tollgate/schemas';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createFundedKey,
  type FundedKey,
  internalApi,
  reserveItem,
  seedCatalog,
  settleItem,
} from '../../../test/billing.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import * as repository from './billing.repository.ts';
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
async function liveSummary(accountId: string) {
  const rows = await repository.selectUsageSummaryLive(
    context.deps.db,
    accountId,
    new Date(`${RANGE.from}T00:00:00Z`),
    new Date(new Date(`${RANGE.to}T00:00:00Z`).getTime() + DAY),
  );
  return rows.map((row) => ({
    day: row.day,
    alias: row.alias,
    requests: row.requests,
    inputTokens: String(row.input_tokens),
    outputTokens: String(row.output_tokens),
    charged: { tokens: String(row.charged_tokens), credits: String(row.charged_credits) },
  }));
}

async function expectSummaryEqualsLive(accountId: string) {
  const summary = await summarizeUsage(context.deps, accountId, RANGE);
  expect(summary).toEqual(await liveSummary(accountId));
  return summary;
}

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
        charged: { tokens: '23', credits: '0' },
      },
      {
        day: isoDay(0),
        alias: 'priced',
        requests: 1,
        inputTokens: '40',
        outputTokens: '30',
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

  it('never moves the watermark past a settlement that commits after the pass', async () => {
    const key = await createFundedKey(context, { credits: 1_000_000n });
    const reservationId = await reserve(key, 'priced');
    const row = {
      ...repository.finishRowOf(
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
        charged: { tokens: '0', credits: '68' },
      },
    ]);
    await advanceUsageRollupOnce(context.deps);
    expect(await rolledUpRows(key.accountId)).toBe(1);
    expect(await expectSummaryEqualsLive(key.accountId)).toEqual(summary);
  });
});
