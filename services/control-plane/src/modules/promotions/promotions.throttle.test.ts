import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, uniqueEmail } from '../../../test/client.ts';
import {
  commerceEnv,
  createPromotionAs,
  type Shopper,
  seedCommerceCatalog,
  shopper,
} from '../../../test/commerce.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';

let context: TestContext;
let admin: Shopper;

beforeAll(async () => {
  context = await createTestContext('commerce-promotion-throttle', {
    ...commerceEnv(),
    PROMOTION_CODE_ACCOUNT_LIMIT: '5',
    PROMOTION_CODE_ADDRESS_LIMIT: '8',
    PROMOTION_CODE_WINDOW_MINUTES: '15',
  });
  await seedCommerceCatalog(context);
  admin = await shopper(context, { admin: true });
});
afterAll(async () => {
  await context.publicApp.mailer.drain();
  await context.close();
});

const preview = (who: Shopper, code: string) =>
  who.client.request('POST', '/promotions/preview', { body: { code, packageId: 'usd' } });

/** A signed-in customer whose requests come from `ip`. */
async function customerAt(ip: string): Promise<Shopper> {
  const client = createClient(context, { ip });
  const email = uniqueEmail('guess');
  await client.signUp(email, 'a long enough password');
  expect((await client.logIn(email, 'a long enough password')).status).toBe(200);
  return { client, accountId: '', email };
}

describe('promotion codes cannot be guessed', () => {
  it('previews and orders naming a code are throttled per account, even with the right code', async () => {
    const { code } = await createPromotionAs(admin, {
      code: `RIGHT${Date.now()}`,
      kind: 'percent_off',
      percentOff: 100,
    });
    const guesser = await shopper(context);
    const answers = await Promise.all(Array.from({ length: 4 }, (_, i) => preview(guesser, `GUESS${i}`)));
    expect(answers.map((answer) => answer.status)).toEqual([422, 422, 422, 422]);
    const order = await guesser.client.request('POST', '/orders', {
      body: { packageId: 'usd', promotionCode: 'GUESS9' },
    });
    expect(order.status).toBe(422);
    // The sixth try is refused before the code is looked up: a right code tells nothing either.
    const refused = await preview(guesser, code);
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('rate_limit_exceeded');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    const ordered = await guesser.client.request('POST', '/orders', {
      body: { packageId: 'usd', promotionCode: code },
    });
    expect(ordered.status).toBe(429);
    // Ordering without a code is not a guess.
    expect((await guesser.client.request('POST', '/orders', { body: { packageId: 'usd' } })).status).toBe(
      201,
    );
    // The window passes: the right code works again.
    context.clock.advance(16 * 60_000);
    expect((await preview(guesser, code)).status).toBe(200);
  });

  it('many accounts from one address share its limit', async () => {
    const ip = '203.0.113.77';
    const accounts = [await customerAt(ip), await customerAt(ip), await customerAt(ip)];
    const statuses: number[] = [];
    for (let i = 0; i < 9; i += 1) statuses.push((await preview(accounts[i % 3]!, `ADDR${i}`)).status);
    expect(statuses).toEqual([422, 422, 422, 422, 422, 422, 422, 422, 429]);
  });

  it('a code an operator does not choose is random and long', async () => {
    const made = await Promise.all(
      Array.from({ length: 3 }, () => createPromotionAs(admin, { kind: 'percent_off', percentOff: 10 })),
    );
    const codes = made.map((promotion) => promotion.code as string);
    for (const code of codes) expect(code).toMatch(/^[A-HJ-NP-Z2-9]{4}(-[A-HJ-NP-Z2-9]{4}){3}$/);
    expect(new Set(codes).size).toBe(3);
    const buyer = await shopper(context);
    expect((await preview(buyer, codes[0]!.toLowerCase())).status).toBe(200);
  });
});
