import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  commerceEnv,
  expectLedgerConsistent,
  grantsOf,
  type Shopper,
  seedCommerceCatalog,
  shopper,
} from '../../../test/commerce.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';

let context: TestContext;
let admin: Shopper;

beforeAll(async () => {
  context = await createTestContext('commerce-admin-orders', commerceEnv());
  await seedCommerceCatalog(context);
  admin = await shopper(context, { admin: true });
});
afterAll(async () => {
  await expectLedgerConsistent(context);
  await context.publicApp.mailer.drain();
  await context.close();
});

describe('manual payments and admin actions', () => {
  it('waits for an admin: verify answers payment_pending; confirm pays once and is audited; reject fails', async () => {
    const buyer = await shopper(context);
    const created = await buyer.client.request('POST', '/orders', {
      body: { packageId: 'usd', provider: 'manual' },
    });
    const id = created.body.data.id;
    const started = await buyer.client.request('POST', `/orders/${id}/payment`);
    expect(started.body.data.payment).toMatchObject({ nextStep: 'wait', instructions: expect.any(String) });
    expect(started.body.data.payment.reference).toMatch(/^TG-/);

    const pending = await buyer.client.request('POST', `/orders/${id}/payment/verify`);
    expect(pending.status).toBe(402);
    expect(pending.body.code).toBe('payment_pending');
    expect(Number(pending.headers.get('retry-after'))).toBeGreaterThan(0);

    expect((await buyer.client.request('POST', `/admin/orders/${id}/payment/confirm`)).status).toBe(403);
    const confirms = await Promise.all(
      Array.from({ length: 5 }, () =>
        admin.client.request('POST', `/admin/orders/${id}/payment/confirm`, {
          body: { note: 'transfer seen' },
        }),
      ),
    );
    expect(confirms.map((answer) => answer.status)).toEqual(Array(5).fill(200));
    expect((await grantsOf(context, buyer.accountId)).grants).toHaveLength(1);
    expect((await buyer.client.request('POST', `/orders/${id}/payment/verify`)).body.data.status).toBe(
      'paid',
    );

    const audit = await admin.client.request(
      'GET',
      `/admin/audit?action=order.confirm_payment&targetId=${id}`,
    );
    expect(audit.body.data.items).toHaveLength(1);
    expect(audit.body.data.items[0]).toMatchObject({
      action: 'order.confirm_payment',
      actor: { accountId: admin.accountId },
      target: { type: 'order', id },
    });

    const other = await buyer.client.request('POST', '/orders', {
      body: { packageId: 'usd', provider: 'manual' },
    });
    await buyer.client.request('POST', `/orders/${other.body.data.id}/payment`);
    const rejected = await admin.client.request('POST', `/admin/orders/${other.body.data.id}/payment/reject`);
    expect(rejected.body.data.status).toBe('failed');
    const failed = await buyer.client.request('POST', `/orders/${other.body.data.id}/payment/verify`);
    expect(failed.status).toBe(402);
    expect(failed.body.code).toBe('payment_verification_failed');

    const filtered = await admin.client.request(
      'GET',
      `/admin/orders?accountId=${buyer.accountId}&status=failed`,
    );
    expect(filtered.body.data.items.map((item: { id: string }) => item.id)).toEqual([other.body.data.id]);
    const byPayment = async (status: string) =>
      (
        await admin.client.request(
          'GET',
          `/admin/orders?accountId=${buyer.accountId}&paymentStatus=${status}`,
        )
      ).body.data.items.map((item: { id: string }) => item.id);
    expect(await byPayment('succeeded')).toEqual([id]);
    expect(await byPayment('failed')).toEqual([other.body.data.id]);
    expect(await byPayment('none')).toEqual([]);

    // Cursor paging walks every order once.
    const first = await admin.client.request('GET', `/admin/orders?accountId=${buyer.accountId}&limit=1`);
    expect(first.body.data.items.map((item: { id: string }) => item.id)).toEqual([other.body.data.id]);
    const second = await admin.client.request(
      'GET',
      `/admin/orders?accountId=${buyer.accountId}&limit=1&after=${first.body.data.nextCursor}`,
    );
    expect(second.body.data.items.map((item: { id: string }) => item.id)).toEqual([id]);
  });

  it('an admin cannot confirm a manual order that was cancelled, rejected or expired', async () => {
    const buyer = await shopper(context);
    const manualOrder = async () => {
      const created = await buyer.client.request('POST', '/orders', {
        body: { packageId: 'usd', provider: 'manual' },
      });
      await buyer.client.request('POST', `/orders/${created.body.data.id}/payment`);
      return created.body.data.id as string;
    };
    const cancelled = await manualOrder();
    expect((await buyer.client.request('POST', `/orders/${cancelled}/cancel`)).status).toBe(200);
    const rejected = await manualOrder();
    expect((await admin.client.request('POST', `/admin/orders/${rejected}/payment/reject`)).status).toBe(200);
    for (const [id, status] of [
      [cancelled, 'cancelled'],
      [rejected, 'failed'],
    ] as const) {
      const confirmed = await admin.client.request('POST', `/admin/orders/${id}/payment/confirm`);
      expect(confirmed.status).toBe(422);
      expect(confirmed.body.code).toBe('validation_failed');
      expect(confirmed.body.errors.status[0]).toMatch(status);
      expect((await buyer.client.request('GET', `/orders/${id}`)).body.data.status).toBe(status);
    }
    expect((await grantsOf(context, buyer.accountId)).grants).toHaveLength(0);
  });

  it('refund takes back only the unused rest of the grant through the ledger', async () => {
    const buyer = await shopper(context);
    const created = await buyer.client.request('POST', '/orders', { body: { packageId: 'usd' } });
    const id = created.body.data.id;
    await buyer.client.request('POST', `/orders/${id}/payment`);
    await buyer.client.request('POST', `/orders/${id}/payment/verify`);
    // 300 tokens used before the refund stay used.
    await context.deps.db.transaction().execute(async (trx) => {
      const { entitlement_id } = await trx
        .selectFrom('orders')
        .select('entitlement_id')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      await trx
        .updateTable('entitlements')
        .set({ remaining: 700n })
        .where('id', '=', entitlement_id!)
        .execute();
      await trx
        .insertInto('ledger_entries')
        .values({
          account_id: buyer.accountId,
          entitlement_id,
          kind: 'settle',
          available_delta: -300n,
          amount: 300n,
          cause: 'test usage',
        })
        .execute();
    });
    // A refund without a reason is refused, and nothing moves.
    const reasonless = await admin.client.request('POST', `/admin/orders/${id}/refund`, {
      body: { note: ' ' },
    });
    expect(reasonless.status).toBe(422);
    expect(reasonless.body.errors.note[0]).toMatch(/reason is required/);
    // The dashboard's form sent twice at once (one Idempotency-Key): refunded once, both answered.
    const sends = await Promise.all(
      [1, 2, 3].map(() =>
        admin.client.request('POST', `/admin/orders/${id}/refund`, {
          body: { note: 'customer asked' },
          headers: { 'idempotency-key': 'refund-form-1' },
        }),
      ),
    );
    expect(sends.map((send) => send.status)).toEqual([200, 200, 200]);
    const refunded = sends[0]!;
    expect(refunded.body.data).toMatchObject({
      status: 'refunded',
      refunded: { tokens: '700', credits: '0' },
    });
    const balance = await buyer.client.request('GET', '/me/balance');
    expect(balance.body.data.remaining.tokens).toBe('0');
    const again = await admin.client.request('POST', `/admin/orders/${id}/refund`, {
      body: { note: 'again' },
      headers: { 'idempotency-key': 'another-form' },
    });
    expect(again.status).toBe(422);
    const audit = await admin.client.request('GET', `/admin/audit?action=order.refund&targetId=${id}`);
    expect(audit.body.data.items).toHaveLength(1);
    expect(audit.body.data.items[0]).toMatchObject({
      action: 'order.refund',
      actor: { accountId: admin.accountId },
      target: { type: 'order', id },
      detail: { note: 'customer asked', accountId: buyer.accountId, tokensTakenBack: '700' },
    });
    await expectLedgerConsistent(context);
  });
});
