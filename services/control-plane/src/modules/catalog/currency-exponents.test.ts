/**
 * Wherever money is defined (the catalogue file, the admin's package and promotion routes) the
 * exponent must be the currency's own ISO 4217 minor units: a 19 USD package written with exponent
 * 0 would be charged USD 0.19 by Stripe, JPY with exponent 2 a hundred times too much.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commerceEnv, type Shopper, seedCommerceCatalog, shopper } from '../../../test/commerce.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { CatalogFileError, parseCatalog } from './catalog-file.ts';

let context: TestContext;
let admin: Shopper;

beforeAll(async () => {
  context = await createTestContext('currency-exponents', commerceEnv());
  await seedCommerceCatalog(context);
  admin = await shopper(context, { admin: true });
});
afterAll(async () => {
  await context.publicApp.mailer.drain();
  await context.close();
});

const packageWith = (price: string) => `
packages:
  - { id: p, name: P, tokens: 10, price: ${price} }
`;

describe('currency exponents', () => {
  it('the catalogue file refuses an exponent that is not the currency’s own', () => {
    for (const [price, problem] of [
      [
        '{ amount: "19", currency: USD, exponent: 0 }',
        /packages\.0\.price\.exponent: USD has 2 decimal places/,
      ],
      [
        '{ amount: "99900", currency: JPY, exponent: 2 }',
        /packages\.0\.price\.exponent: JPY has 0 decimal places/,
      ],
      ['{ amount: "1", currency: XAU, exponent: 0 }', /packages\.0\.price\.currency: XAU is not/],
    ] as const) {
      expect(() => parseCatalog(packageWith(price), 'catalog.yaml', {})).toThrow(CatalogFileError);
      expect(() => parseCatalog(packageWith(price), 'catalog.yaml', {})).toThrow(problem);
    }
    const kuwaiti = parseCatalog(packageWith('{ amount: "5000", currency: KWD, exponent: 3 }'), 'c', {});
    expect(kuwaiti.packages[0]?.price).toEqual({ amount: '5000', currency: 'KWD', exponent: 3 });
  });

  it('an admin cannot put a package or a promotion in the wrong exponent', async () => {
    const pack = (currency: string, exponent: number) => ({
      name: 'Wrong',
      tokens: '10',
      validityDays: null,
      aliases: null,
      ceilings: { maxOutputTokens: null, requestsPerMinute: null, concurrency: null },
      price: { amount: '1900', currency, exponent },
      published: true,
    });
    for (const [currency, exponent] of [
      ['USD', 0],
      ['JPY', 2],
    ] as const) {
      const refused = await admin.client.request('PUT', '/admin/catalog/packages/wrong', {
        body: pack(currency, exponent),
      });
      expect(refused.status).toBe(422);
      expect(refused.body.errors['price.exponent']).toBeDefined();
    }
    const packages = await admin.client.request('GET', '/catalog/packages');
    expect(packages.body.data.map((item: { id: string }) => item.id)).not.toContain('wrong');
    const saved = await admin.client.request('PUT', '/admin/catalog/packages/right', {
      body: pack('USD', 2),
    });
    expect(saved.status).toBe(200);

    const promotion = await admin.client.request('POST', '/admin/promotions', {
      body: {
        code: `YEN${Date.now()}`,
        kind: 'amount_off',
        amountOff: { amount: '10000', currency: 'JPY', exponent: 2 },
      },
    });
    expect(promotion.status).toBe(422);
    expect(promotion.body.errors['amountOff.exponent']).toBeDefined();
  });
});
