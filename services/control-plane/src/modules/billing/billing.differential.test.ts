import { randomUUID } from 'node:crypto';
import { chargeWithinLegs, type ReservedLeg } from '@tollgate/schemas';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createFundedKey,
  ENGINES,
  endItem,
  expectLedgerConsistent,
  expireEntitlement,
  type FundedKey,
  grantEntitlement,
  internalApi,
  reserveItem,
  seedCatalog,
  setPackageRate,
  setPrice,
  settleItem,
  sourcesOf,
  spentOf,
} from '../../../test/billing.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { fullPrice, type ModelUsage, MoneyModel, type Price } from '../../../test/money-model.ts';
import { changeCredit } from './billing.service.ts';
import { changeBalances } from './engines.ts';
import { resolveHold } from './holds.service.ts';
import { clawBackOrderGrant } from './order-grants.ts';

/**
 * The differential test of docs/billing/rules.md: random sequences of operations on one account
 * run against the reference model (test/money-model.ts) and against an engine; every answer,
 * every source's balance and what the ledger charged per source must agree after every step.
 * A few sequences run with the suite; `pnpm test:money --runs N --seed S` runs more.
 */

const RUNS = Number(process.env.MONEY_RUNS ?? 40);
/** Printed with the result, so that any run can be replayed (`--seed`). */
const SEED = Number(process.env.MONEY_SEED ?? Math.floor(Math.random() * 2 ** 31));
const DAY = 86_400_000;
const ALIASES = ['priced', 'tokens-only'] as const;
const BASE_PRICE = fullPrice({ input: 2n, output: 5n });

/** Prices as written: input and output, and each other part given or left to its default. */
interface PriceOp {
  input: bigint;
  output: bigint;
  cacheRead?: bigint;
  cacheWrite?: bigint;
  cacheWrite1h?: bigint;
  request?: bigint;
}

type Op =
  | { kind: 'grant'; tokens: bigint; days: number | null; aliases: string[] | null; weighted: boolean }
  | { kind: 'rate'; alias: (typeof ALIASES)[number]; rate: bigint }
  | { kind: 'credit'; amount: bigint }
  | { kind: 'price'; price: PriceOp }
  | { kind: 'reserve'; calls: Array<{ alias: (typeof ALIASES)[number]; input: bigint; output: bigint }> }
  | { kind: 'settle'; call: number; usage: ModelUsage }
  | { kind: 'settleForgotten'; alias: (typeof ALIASES)[number]; usage: ModelUsage }
  | { kind: 'end'; call: number; action: 'release' | 'hold' }
  | { kind: 'resolve'; call: number; usage: ModelUsage | null }
  | { kind: 'expire'; entitlement: number }
  | { kind: 'refund'; entitlement: number };

const amount = (max: number) => fc.bigInt({ min: 0n, max: BigInt(max) });
const alias = fc.constantFrom(...ALIASES);
/** A usage by part; cache parts often absent (zero), as most calls report none. */
const usage = (max: number): fc.Arbitrary<ModelUsage> =>
  fc.record(
    {
      input: amount(max),
      output: amount(max),
      cacheRead: amount(max),
      cacheWrite: amount(max / 2),
      cacheWrite1h: amount(max / 4),
    },
    { requiredKeys: ['input', 'output'] },
  );
const price = fc.record(
  {
    input: fc.bigInt({ min: 1n, max: 9n }),
    output: fc.bigInt({ min: 1n, max: 9n }),
    cacheRead: fc.bigInt({ min: 0n, max: 3n }),
    cacheWrite: fc.bigInt({ min: 1n, max: 12n }),
    cacheWrite1h: fc.bigInt({ min: 1n, max: 18n }),
    request: fc.bigInt({ min: 0n, max: 20n }),
  },
  { requiredKeys: ['input', 'output'] },
);
const opArbitrary: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('grant' as const),
    tokens: fc.bigInt({ min: 1n, max: 400n }),
    days: fc.option(fc.integer({ min: 1, max: 4 }), { nil: null }),
    aliases: fc.constantFrom<Array<string[] | null>>(null, ['tokens-only'], ['priced']),
    weighted: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('rate' as const), alias, rate: fc.bigInt({ min: 1n, max: 7n }) }),
  fc.record({ kind: fc.constant('credit' as const), amount: fc.bigInt({ min: -500n, max: 3000n }) }),
  fc.record({ kind: fc.constant('price' as const), price }),
  fc.record({
    kind: fc.constant('reserve' as const),
    calls: fc.array(fc.record({ alias, input: amount(150), output: fc.bigInt({ min: 1n, max: 150n }) }), {
      minLength: 1,
      maxLength: 3,
    }),
  }),
  fc.record({ kind: fc.constant('settle' as const), call: fc.nat(), usage: usage(300) }),
  // Usage that mostly fits the reservation: the gateway tells such a cost at once (chargeWithinLegs).
  fc.record({ kind: fc.constant('settle' as const), call: fc.nat(), usage: usage(40) }),
  fc.record({ kind: fc.constant('settleForgotten' as const), alias, usage: usage(100) }),
  fc.record({
    kind: fc.constant('end' as const),
    call: fc.nat(),
    action: fc.constantFrom('release', 'hold'),
  }),
  fc.record({
    kind: fc.constant('resolve' as const),
    call: fc.nat(),
    usage: fc.option(usage(300), { nil: null }),
  }),
  fc.record({ kind: fc.constant('expire' as const), entitlement: fc.nat() }),
  fc.record({ kind: fc.constant('refund' as const), entitlement: fc.nat() }),
);

/** A call reserved in a sequence, with the legs the engine answered (the hot tier tells them). */
type Call = { id: string; alias: string; legs?: ReservedLeg[] | undefined };

/** The reserve ops weigh more: most interesting states need calls in flight. */
const sequenceArbitrary = fc.array(
  fc.oneof({ arbitrary: opArbitrary, weight: 3 }, { arbitrary: opArbitrary.filter(isCall), weight: 2 }),
  { minLength: 1, maxLength: 30, size: 'max' },
);
function isCall(op: Op): boolean {
  return op.kind === 'reserve' || op.kind === 'settle' || op.kind === 'end';
}

describe.each(ENGINES)('%s', (engine, hotTier) => {
  let context: TestContext;
  let api: ReturnType<typeof internalApi>;
  let sequences = 0;
  let operations = 0;
  /** Settles whose cost chargeWithinLegs told from the reserve's answer alone. */
  let toldAtOnce = 0;

  beforeAll(async () => {
    context = await createTestContext(`billing-differential-${hotTier ? 'hot' : 'pg'}`, {}, { hotTier });
    await seedCatalog(context);
    api = internalApi(context);
  });
  afterAll(async () => {
    await setPrice(context, 'priced', BASE_PRICE.input, BASE_PRICE.output);
    for (const name of ALIASES) await setPackageRate(context, name, 1n);
    await context.close();
  });

  /** Runs one sequence on a new account; throws on the first disagreement, naming the step. */
  async function run(ops: Op[], rates: Record<(typeof ALIASES)[number], bigint>): Promise<void> {
    await setPrice(context, 'priced', BASE_PRICE.input, BASE_PRICE.output);
    // Each sequence starts with its own package rates (R2b), so weighted grants meet rates above 1.
    for (const name of ALIASES) await setPackageRate(context, name, rates[name]);
    const prices = new Map<string, Price>([
      ['priced', { ...BASE_PRICE }],
      ['tokens-only', null],
    ]);
    const cover = BigInt(context.deps.config.billing.overrunCoverPercent);
    const model = new MoneyModel(cover, prices, !hotTier, new Map(Object.entries(rates)));
    const key: FundedKey = await createFundedKey(context);
    const calls: Call[] = [];
    sequences += 1;
    for (const [step, op] of ops.entries()) {
      operations += 1;
      const where = `${engine}, step ${step}: ${JSON.stringify(op, (_k, v) => (typeof v === 'bigint' ? `${v}` : v))}`;
      await apply(op, model, key, calls, prices, where);
      expect(await sourcesOf(context, key.accountId), where).toEqual(model.sources());
      expect(await spentOf(context, key.accountId), where).toEqual(model.spent);
    }
    await expectLedgerConsistent(context);
  }

  async function apply(
    op: Op,
    model: MoneyModel,
    key: FundedKey,
    calls: Call[],
    prices: Map<string, Price>,
    where: string,
  ): Promise<void> {
    const entitlementAt = (index: number) => model.entitlements[index % model.entitlements.length];
    const callAt = (index: number) => calls[index % calls.length];
    switch (op.kind) {
      case 'grant': {
        const id = await grantEntitlement(context, key.accountId, {
          tokens: op.tokens,
          expiresInMs: op.days === null ? null : op.days * DAY,
          aliases: op.aliases,
          weighted: op.weighted,
        });
        model.grantEntitlement(id, op.tokens, op.days, op.aliases, op.weighted);
        return;
      }
      case 'rate': {
        await setPackageRate(context, op.alias, op.rate);
        model.rates.set(op.alias, op.rate);
        return;
      }
      case 'credit': {
        if (op.amount === 0n) return;
        const kind = op.amount > 0n ? 'grant' : 'adjustment';
        const input = { accountId: key.accountId, amount: op.amount, kind, cause: 'test' } as const;
        const done = await changeCredit(context.deps, input).then(
          () => true,
          () => false,
        );
        expect(done, where).toBe(model.changeCredit(op.amount));
        return;
      }
      case 'price': {
        const { input, output, ...parts } = op.price;
        await setPrice(context, 'priced', input, output, parts);
        prices.set('priced', fullPrice(op.price));
        return;
      }
      case 'reserve': {
        const items = op.calls.map((call) => reserveItem(key, call.alias, call.input, call.output));
        const response = await api.reserve(items);
        expect(response.status, where).toBe(200);
        items.forEach((item, index) => {
          const call = op.calls[index]!;
          const expected = model.reserve(item.reservationId, call.alias, call.input, call.output);
          const actual = response.body.results[index]!;
          if (expected.ok) {
            expect(actual, where).toMatchObject({
              ok: true,
              reserved: { tokens: String(expected.tokens), credits: String(expected.credits) },
            });
            calls.push({
              id: item.reservationId,
              alias: call.alias,
              legs: actual.ok ? actual.legs : undefined,
            });
          } else {
            expect(actual, where).toMatchObject({ ok: false, code: expected.code });
          }
        });
        return;
      }
      case 'settle':
      case 'settleForgotten': {
        const call = op.kind === 'settle' ? callAt(op.call) : { id: randomUUID(), alias: op.alias as string };
        if (!call) return;
        const open = ['reserved', 'held'].includes(model.reservations.get(call.id)?.status ?? '');
        const expected = model.settle(call.id, call.alias, op.usage);
        const { input, output, ...cache } = op.usage;
        const item = settleItem(key, call.id, call.alias, input, output, cache);
        const response = await api.finish([item]);
        expect(response.body.results[0], where).toMatchObject(finishShape(expected));
        // What the gateway tells the caller at once, from the legs the reserve answered, is what
        // the engine charged (docs/receipts.md), whenever it can tell.
        const told =
          open && call.legs && item.action === 'settle' ? chargeWithinLegs(call.legs, item.usage) : null;
        if (told) {
          toldAtOnce += 1;
          expect(response.body.results[0], where).toMatchObject({
            charged: told,
            writtenOff: { tokens: '0', credits: '0' },
          });
        }
        return;
      }
      case 'end': {
        const call = callAt(op.call);
        if (!call) return;
        const expected = model.end(call.id, op.action, call.alias);
        const outcome = op.action === 'hold' ? 'billing_settlement_pending' : 'upstream_unavailable';
        const response = await api.finish([endItem(key, call.id, call.alias, op.action, outcome)]);
        expect(response.body.results[0], where).toMatchObject(finishShape(expected));
        return;
      }
      case 'resolve': {
        // An admin resolves a hold (R13): with the provider's figures (a settle) or nothing.
        const call = callAt(op.call);
        if (!call) return;
        const held = model.reservations.get(call.id)?.status === 'held';
        const resolution = op.usage
          ? ({
              action: 'settle',
              inputTokens: op.usage.input,
              outputTokens: op.usage.output,
              cacheReadTokens: op.usage.cacheRead ?? 0n,
              cacheWriteTokens: op.usage.cacheWrite ?? 0n,
              cacheWrite1hTokens: op.usage.cacheWrite1h ?? 0n,
            } as const)
          : ({ action: 'release' } as const);
        const answer = await resolveHold(context.deps, call.id, resolution).then(
          (result) => result,
          (error: { code?: string }) => error.code,
        );
        if (!held) {
          expect(answer, where).toBe('not_found');
          return;
        }
        const expected = op.usage
          ? model.settle(call.id, call.alias, op.usage)
          : model.end(call.id, 'release', call.alias);
        expect(answer, where).toMatchObject({
          status: expected.status,
          charged: { tokens: String(expected.chargedTokens), credits: String(expected.chargedCredits) },
        });
        return;
      }
      case 'expire': {
        const entitlement = entitlementAt(op.entitlement);
        if (!entitlement) return;
        await expireEntitlement(context, key.accountId, entitlement.id);
        model.expire(entitlement.id);
        return;
      }
      case 'refund': {
        const entitlement = entitlementAt(op.entitlement);
        if (!entitlement) return;
        await changeBalances(context.deps, (balances) =>
          clawBackOrderGrant(balances, {
            orderId: randomUUID(),
            accountId: key.accountId,
            entitlementId: entitlement.id,
            bonusCredits: 0n,
            now: context.deps.clock.now(),
          }),
        );
        model.refund(entitlement.id);
        return;
      }
    }
  }

  it(`agrees with the reference model over ${RUNS} random sequences`, { timeout: 600_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          priced: fc.bigInt({ min: 1n, max: 6n }),
          'tokens-only': fc.bigInt({ min: 1n, max: 6n }),
        }),
        sequenceArbitrary,
        (rates, ops) => run(ops, rates),
      ),
      { numRuns: RUNS, seed: SEED, verbose: 0 },
    );
    console.info(
      `money: ${engine}: ${sequences} sequences (${operations} operations), seed ${SEED}: agreed with the model` +
        ` (${toldAtOnce} costs told from the reserve's legs)`,
    );
  });
});

function finishShape(expected: ReturnType<MoneyModel['settle']>) {
  return {
    status: expected.status,
    charged: { tokens: String(expected.chargedTokens), credits: String(expected.chargedCredits) },
    writtenOff: { tokens: String(expected.writtenOffTokens), credits: String(expected.writtenOffCredits) },
  };
}
