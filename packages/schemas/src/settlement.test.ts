import { describe, expect, it } from 'vitest';
import type { ReservedLeg } from './billing.ts';
import { chargeWithinLegs } from './settlement.ts';

const price = { input: '3', output: '5', cacheRead: '1', cacheWrite: '4', cacheWrite1h: '6', request: '0' };
const credit = (amount: string, over: Partial<typeof price> = {}): ReservedLeg => ({
  source: 'credit',
  amount,
  price: { ...price, ...over },
});
const entitlement = (amount: string, rate = '1'): ReservedLeg => ({ source: 'entitlement', amount, rate });

describe('chargeWithinLegs (R9 within the reservation)', () => {
  it('charges each part at the price fixed at reservation', () => {
    const usage = {
      inputTokens: '10',
      outputTokens: '2',
      cacheReadTokens: '100',
      cacheWriteTokens: '7',
      cacheWrite1hTokens: '1',
    };
    // 10*3 + 7*4 + 1*6 + 100*1 + 2*5
    expect(chargeWithinLegs([credit('1000')], usage)).toEqual({ tokens: '0', credits: '174' });
  });

  it('adds the price per call only when credit pays some token', () => {
    const usage = { inputTokens: '4', outputTokens: '1' };
    expect(chargeWithinLegs([credit('100', { request: '9' })], usage)).toEqual({
      tokens: '0',
      credits: '26',
    });
    expect(chargeWithinLegs([entitlement('5'), credit('100', { request: '9' })], usage)).toEqual({
      tokens: '5',
      credits: '0',
    });
  });

  it('takes whole tokens from an entitlement at its rate, input parts first, then credit', () => {
    // 10 units at 3 per token cover 3 tokens: 3 of the 4 input; 1 input and 2 output left for credit.
    const usage = { inputTokens: '4', outputTokens: '2' };
    expect(chargeWithinLegs([entitlement('10', '3'), credit('50')], usage)).toEqual({
      tokens: '9',
      credits: '13',
    });
  });

  it('is null when usage goes beyond the legs (R10 decides at settle time)', () => {
    const usage = { inputTokens: '4', outputTokens: '2' };
    expect(chargeWithinLegs([credit('21')], usage)).toBeNull();
    expect(chargeWithinLegs([credit('22')], usage)).toEqual({ tokens: '0', credits: '22' });
    expect(chargeWithinLegs([entitlement('5')], usage)).toBeNull();
    expect(chargeWithinLegs([entitlement('6')], usage)).toEqual({ tokens: '6', credits: '0' });
    expect(chargeWithinLegs([], { inputTokens: '0', outputTokens: '0' })).toBeNull();
  });
});
