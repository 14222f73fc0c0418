import { describe, expect, it } from 'vitest';
import { type PackageRow, type PromotionRow, priceOf } from './pricing.ts';

const pack = (amount: bigint, currency = 'USD', exponent = 2): PackageRow => ({
  id: 'p',
  name: 'P',
  tokens: 1000n,
  validity_days: null,
  aliases: null,
  max_output_tokens: null,
  requests_per_minute: null,
  concurrency: null,
  price_amount: amount,
  price_currency: currency,
  price_exponent: exponent,
  published: true,
  counts: 'tokens',
  updated_at: new Date(),
});

const promotion = (fields: Partial<PromotionRow>): PromotionRow => ({
  id: '00000000-0000-0000-0000-000000000000',
  code: 'X',
  kind: 'percent_off',
  percent_off: null,
  amount_off: null,
  currency: null,
  exponent: null,
  bonus: null,
  starts_at: null,
  ends_at: null,
  package_ids: null,
  total_limit: null,
  per_account_limit: null,
  min_amount: null,
  held: 0,
  active: true,
  created_at: new Date(),
  updated_at: new Date(),
  ...fields,
});

describe('priceOf', () => {
  it('rounds a percent discount down to a whole minor unit, in any exponent', () => {
    expect(priceOf(pack(999n, 'JPY', 0), promotion({ percent_off: 15 }))).toMatchObject({
      discount: 149n,
      amount: 850n,
    });
    expect(priceOf(pack(1999n), promotion({ percent_off: 15 }))).toMatchObject({
      discount: 299n,
      amount: 1700n,
    });
    expect(priceOf(pack(1n), promotion({ percent_off: 99 }))).toMatchObject({ discount: 0n, amount: 1n });
    expect(priceOf(pack(1999n), promotion({ percent_off: 100 }))).toMatchObject({
      discount: 1999n,
      amount: 0n,
    });
  });

  it('stays exact beyond 2^53', () => {
    const huge = 2n ** 60n + 7n;
    expect(priceOf(pack(huge), promotion({ percent_off: 50 }))).toMatchObject({
      discount: 2n ** 59n + 3n,
      amount: 2n ** 59n + 4n,
    });
  });

  it('never takes more than the price off, and adds bonuses without touching the price', () => {
    expect(priceOf(pack(300n), promotion({ kind: 'amount_off', amount_off: 500n }))).toMatchObject({
      discount: 300n,
      amount: 0n,
    });
    expect(priceOf(pack(300n), promotion({ kind: 'bonus_tokens', bonus: 50n }))).toMatchObject({
      amount: 300n,
      bonusTokens: 50n,
    });
    expect(priceOf(pack(300n), promotion({ kind: 'bonus_credit', bonus: 9n }))).toMatchObject({
      amount: 300n,
      bonusCredits: 9n,
    });
  });
});
