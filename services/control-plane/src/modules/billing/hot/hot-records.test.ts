import { createRedisNamespace, removeRedisNamespace } from '@tollgate/test-harness';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CALL_FIELDS, encodeCall, joinFields, RECORD_FIELDS } from './hot-layout.ts';
import { type FinishedRecord, parseRecord, persistItemOf, writeOffsOf } from './hot-records.ts';
import { SCRIPT_SOURCES } from './hot-scripts.ts';

/**
 * The record the finish script writes for a finished call, read back by hot-records.ts: the
 * script and the field list must agree field by field, and the write-offs computed from it must
 * be those of docs/billing/rules.md R10 (Postgres's tollgate_settle_legs + tollgate_charge_available).
 */

let redis: Redis;
let prefix: string;
const redisUrl = () => inject('testServices').redisUrl;

beforeAll(() => {
  prefix = createRedisNamespace('hot-records');
  redis = new Redis(redisUrl());
});
afterAll(async () => {
  redis.disconnect();
  await removeRedisNamespace(redisUrl(), prefix);
});

let calls = 0;

/** Runs the real finish script for one call in flight against a lease set up field by field. */
async function finishInRedis(
  lease: Record<string, string>,
  call: { legs: string; tokens: string; credits: string },
  settle: { usageIn: string; usageOut: string; inputPrice: string; outputPrice: string },
): Promise<{ text: string; lease: Record<string, string> }> {
  calls += 1;
  const leaseKey = `${prefix}{acct${calls}}:lease`;
  const callsKey = `${prefix}{acct${calls}}:calls`;
  await redis.hset(leaseKey, { lease: 'lease-1', ver: '1', ...lease });
  const inFlight = joinFields(CALL_FIELDS, {
    keyId: 'key-1',
    alias: 'alias-1',
    surface: 'chat_completions',
    created: '1700000000000000',
    estIn: '10',
    estOut: '20',
    reservedTokens: call.tokens,
    reservedCredits: call.credits,
    legs: call.legs,
    slots: '',
  });
  await redis.hset(callsKey, 'call-1', `R|${inFlight}`);
  const { keys, args } = encodeCall('hotFinish', {
    keys: { lease: leaseKey, calls: callsKey },
    args: { forgotten: '0', topupAllowed: '1' },
    items: [
      {
        keys: {},
        args: {
          id: 'call-1',
          action: 'settle',
          usageIn: settle.usageIn,
          usageOut: settle.usageOut,
          outcome: 'ok',
          httpStatus: '200',
          keyId: 'key-1',
          alias: 'alias-1',
          surface: 'chat_completions',
          inputPrice: settle.inputPrice,
          outputPrice: settle.outputPrice,
          created: '1700000000000000',
          packageRate: '1',
        },
      },
    ],
  });
  const reply = (await redis.eval(SCRIPT_SOURCES.hotFinish, keys.length, ...keys, ...args)) as string[][];
  expect(reply[0]![0]).toBe('done');
  return { text: reply[0]![1]!, lease: await redis.hgetall(leaseKey) };
}

describe('the finish script and hot-records.ts', () => {
  it('agree on every field of a settled call with a credit leg, and its credit write-off', async () => {
    // 100 tokens of e1 and 70 credits reserved; 500 credits free in the lease.
    const { text, lease } = await finishInRedis(
      {
        order: 'e1,c',
        'n:e1': '100',
        'r:e1': '0',
        'h:e1': '100',
        'x:e1': '0',
        'a:e1': '',
        'r:c': '500',
        'h:c': '70',
      },
      { legs: 'e:e1:100;c:c:70:2:5', tokens: '100', credits: '70' },
      { usageIn: '300', usageOut: '100', inputPrice: '3', outputPrice: '7' },
    );
    expect(text.split('|')).toHaveLength(RECORD_FIELDS.length);
    const record = parseRecord(text);
    // e1 pays 100 input tokens; the credit leg 200 x 2 + 100 x 5 = 900 at its own prices: 70
    // from the leg, 830 beyond it from the 500 free, 330 written off.
    expect(record).toEqual({
      id: 'call-1',
      action: 'settle',
      status: 'settled',
      outcome: 'ok',
      httpStatus: '200',
      lease: 'lease-1',
      keyId: 'key-1',
      alias: 'alias-1',
      surface: 'chat_completions',
      created: '1700000000000000',
      estIn: '10',
      estOut: '20',
      reservedTokens: '100',
      reservedCredits: '70',
      legs: 'e:e1:100;c:c:70:2:5',
      usageIn: '300',
      usageOut: '100',
      at: expect.stringMatching(/^\d+$/),
      charges: 'e1:100;c:570',
      legTakeIn: '100',
      legTakeOut: '0',
      creditTake: '70',
      creditIn: '2',
      creditOut: '5',
      overTakeIn: '0',
      overTakeOut: '0',
      overCredit: '500',
      overIn: '',
      overOut: '',
      forgotten: '0',
    } satisfies Record<(typeof RECORD_FIELDS)[number], unknown>);
    expect(writeOffsOf(record)).toEqual({ tokens: 0n, credits: 330n });
    expect(lease).toMatchObject({ 'r:e1': '0', 'h:e1': '0', 'r:c': '0', 'h:c': '0' });
    expect(persistItemOf('account-1', record)).toMatchObject({
      charges: [
        { entitlementId: 'e1', amount: '100' },
        { entitlementId: null, amount: '570' },
      ],
      charged_tokens: '100',
      charged_credits: '570',
      written_off_tokens: '0',
      written_off_credits: '330',
    });
  });

  it('record tokens drawn beyond the reservation from the next source, and the unpriced rest written off', async () => {
    const { text, lease } = await finishInRedis(
      {
        order: 'e1,e2,c',
        'n:e1': '50',
        'r:e1': '0',
        'h:e1': '50',
        'x:e1': '0',
        'a:e1': '',
        'n:e2': '30',
        'r:e2': '30',
        'h:e2': '0',
        'x:e2': '0',
        'a:e2': '',
        'r:c': '1000',
      },
      { legs: 'e:e1:50', tokens: '50', credits: '0' },
      { usageIn: '60', usageOut: '40', inputPrice: '', outputPrice: '' },
    );
    const record = parseRecord(text);
    // e1 pays 50 input tokens; beyond it e2 pays 10 in + 20 out; 20 output tokens have no price.
    expect(record).toMatchObject({
      charges: 'e1:50;e2:30',
      legTakeIn: '50',
      legTakeOut: '0',
      overTakeIn: '10',
      overTakeOut: '20',
      overCredit: '0',
      overIn: '',
      creditIn: '',
    });
    expect(writeOffsOf(record)).toEqual({ tokens: 20n, credits: 0n });
    expect(lease).toMatchObject({ 'r:e2': '0', 'r:c': '1000' });
  });

  it('record the price of settle time for usage beyond a reservation without a credit leg', async () => {
    const { text } = await finishInRedis(
      { order: 'e1,c', 'n:e1': '50', 'r:e1': '0', 'h:e1': '50', 'x:e1': '0', 'a:e1': '', 'r:c': '100' },
      { legs: 'e:e1:50', tokens: '50', credits: '0' },
      { usageIn: '50', usageOut: '30', inputPrice: '3', outputPrice: '7' },
    );
    const record = parseRecord(text);
    // 30 output tokens at 7 = 210 owed, 100 free: 110 written off.
    expect(record).toMatchObject({ overIn: '3', overOut: '7', overCredit: '100', charges: 'e1:50;c:100' });
    expect(writeOffsOf(record)).toEqual({ tokens: 0n, credits: 110n });
  });
});

describe('writeOffsOf', () => {
  const empty = parseRecord(RECORD_FIELDS.map((field) => (field === 'status' ? 'settled' : '')).join('|'));
  const base = (fields: Partial<FinishedRecord>): FinishedRecord => ({ ...empty, ...fields });

  it('writes off nothing for a released or held call', () => {
    const usage = { usageIn: '100', usageOut: '100' };
    expect(writeOffsOf({ ...base(usage), status: 'released' })).toEqual({ tokens: 0n, credits: 0n });
    expect(writeOffsOf({ ...base(usage), status: 'held' })).toEqual({ tokens: 0n, credits: 0n });
  });

  it('counts exactly past 2^53 and caps a credit write-off at the largest bigint Postgres holds', () => {
    const tokens = writeOffsOf(base({ usageIn: '9007199254740993', usageOut: '2', legTakeIn: '1' }));
    expect(tokens).toEqual({ tokens: 9_007_199_254_740_994n, credits: 0n });
    const credits = writeOffsOf(
      base({ usageIn: '9007199254740993', usageOut: '0', overIn: '9007199254740993', overOut: '1' }),
    );
    expect(credits).toEqual({ tokens: 0n, credits: 9_223_372_036_854_775_807n });
  });
});
