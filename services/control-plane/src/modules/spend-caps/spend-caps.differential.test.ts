import { apiKeyDigest, type ReserveResult } from '@tollgate/schemas';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createFundedKey,
  ENGINES,
  endItem,
  expectLedgerConsistent,
  type FundedKey,
  grantEntitlement,
  internalApi,
  reserveItem,
  seedCatalog,
  settleItem,
} from '../../../test/billing.ts';
import { CapModel, type CapUnit } from '../../../test/cap-model.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { createKey } from '../api-keys/api-keys.service.ts';
import { readCapStatus, setSpendCap } from './spend-caps.service.ts';

/**
 * The caps' differential test (rules R23-R26): random sequences of cap changes, reservations in
 * batches, settles below and above the estimate, releases and holds on one account with two keys,
 * against the cap model (test/cap-model.ts) and each engine; every answer and every cap's count
 * must agree after every step. The balance never runs short, so only caps refuse.
 */
const RUNS = Number(process.env.CAPS_RUNS ?? 12);
const SEED = Number(process.env.CAPS_SEED ?? Math.floor(Math.random() * 2 ** 31));
const PRICES = { priced: { input: 2n, output: 5n }, 'tokens-only': null } as const;
type Alias = keyof typeof PRICES;

type Op =
  | { kind: 'cap'; key: 0 | 1 | null; unit: CapUnit; limit: bigint | null }
  | { kind: 'reserve'; calls: Array<{ key: 0 | 1; alias: Alias; input: bigint; output: bigint }> }
  | { kind: 'settle'; call: number; input: bigint; output: bigint }
  | { kind: 'end'; call: number; action: 'release' | 'hold' };

const keyIndex = fc.constantFrom<0 | 1>(0, 1);
const opArbitrary: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('cap' as const),
    key: fc.constantFrom<0 | 1 | null>(0, 1, null),
    unit: fc.constantFrom<CapUnit>('credits', 'tokens'),
    limit: fc.option(fc.bigInt({ min: 1n, max: 3000n }), { nil: null, freq: 5 }),
  }),
  fc.record({
    kind: fc.constant('reserve' as const),
    calls: fc.array(
      fc.record({
        key: keyIndex,
        alias: fc.constantFrom<Alias>('priced', 'tokens-only'),
        input: fc.bigInt({ min: 0n, max: 150n }),
        output: fc.bigInt({ min: 1n, max: 150n }),
      }),
      { minLength: 1, maxLength: 3 },
    ),
  }),
  fc.record({
    kind: fc.constant('settle' as const),
    call: fc.nat(),
    input: fc.bigInt({ min: 0n, max: 300n }),
    output: fc.bigInt({ min: 0n, max: 200n }),
  }),
  fc.record({
    kind: fc.constant('end' as const),
    call: fc.nat(),
    action: fc.constantFrom('release', 'hold'),
  }),
);

describe.each(ENGINES)('spend caps against the cap model (%s)', (label, hotTier) => {
  let context: TestContext;
  let api: ReturnType<typeof internalApi>;

  beforeAll(async () => {
    context = await createTestContext(`caps-diff-${label.replace(' ', '-')}`, {}, { hotTier });
    await seedCatalog(context);
    api = internalApi(context);
  }, 60_000);
  afterAll(async () => {
    await expectLedgerConsistent(context);
    await context.close();
  });

  async function run(ops: Op[]): Promise<void> {
    const first = await createFundedKey(context, { credits: 10_000_000n });
    await grantEntitlement(context, first.accountId, { tokens: 10_000_000n, aliases: ['tokens-only'] });
    const { key, secret } = await createKey(context.deps, first.accountId, { name: 'second', scope: null });
    const keys: FundedKey[] = [first, { ...first, keyId: key.id, secret, digest: apiKeyDigest(secret) }];
    const model = new CapModel();
    const calls: Array<{ id: string; key: FundedKey; alias: Alias }> = [];
    const actor = { accountId: first.accountId, ip: null, userAgent: null };
    for (const [step, op] of ops.entries()) {
      const where = `step ${step} ${JSON.stringify(op, (_, value) => (typeof value === 'bigint' ? `${value}` : value))}`;
      if (op.kind === 'cap') {
        const keyId = op.key === null ? null : (keys[op.key] as FundedKey).keyId;
        await setSpendCap(
          context.deps,
          actor,
          'admin',
          { accountId: first.accountId, keyId },
          {
            unit: op.unit,
            period: '5h',
            limit: op.limit,
          },
        );
        model.setCap(keyId, op.unit, op.limit);
      } else if (op.kind === 'reserve') {
        const items = op.calls.map((call) => {
          const key = keys[call.key] as FundedKey;
          return { key, alias: call.alias, item: reserveItem(key, call.alias, call.input, call.output) };
        });
        const answer = await api.reserve(items.map((each) => each.item));
        expect(answer.status, where).toBe(200);
        items.forEach((each, position) => {
          const result = answer.body.results[position] as ReserveResult;
          const expected = model.reserve(
            each.item.reservationId,
            each.key.keyId,
            PRICES[each.alias],
            BigInt(each.item.estimate.inputTokens),
            BigInt(each.item.estimate.outputTokens),
          );
          expect(result.ok ? 'ok' : result.code, where).toBe(expected);
          if (result.ok) calls.push({ id: each.item.reservationId, key: each.key, alias: each.alias });
        });
      } else if (calls.length > 0) {
        const call = calls[op.call % calls.length] as (typeof calls)[number];
        if (op.kind === 'settle') {
          await api.finish([settleItem(call.key, call.id, call.alias, op.input, op.output)]);
          model.finish(call.id, 'settle', { input: op.input, output: op.output });
        } else {
          await api.finish([endItem(call.key, call.id, call.alias, op.action, 'upstream_unavailable')]);
          model.finish(call.id, op.action);
        }
      }
      const status = await readCapStatus(context.deps, first.accountId);
      const counted = Object.fromEntries(
        status.caps.map((cap) => [`${cap.keyId ?? ''}|${cap.unit}`, cap.used]),
      );
      const expected = Object.fromEntries([...model.caps].map(([name, cap]) => [name, model.used(cap)]));
      expect(counted, where).toEqual(expected);
    }
  }

  it(`agrees with the model on random sequences (seed ${SEED})`, async () => {
    await fc.assert(fc.asyncProperty(fc.array(opArbitrary, { minLength: 5, maxLength: 30 }), run), {
      numRuns: RUNS,
      seed: SEED,
      endOnFailure: true,
    });
  }, 300_000);
});
