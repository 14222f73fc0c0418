import { z } from '@hono/zod-openapi';
import type { Dependencies } from '../../deps.ts';
import { nullableRef } from '../../http/openapi.ts';
import type { OrderWithPayment, PaymentRow } from './orders.service.ts';

const INTEGER = /^(?:0|[1-9][0-9]*)$/;

export const MoneyView = z
  .object({
    amount: z
      .string()
      .regex(INTEGER)
      .openapi({ description: 'Integer minor units, as a string', example: '1999' }),
    currency: z.string().openapi({ example: 'USD' }),
    exponent: z.number().int().openapi({ description: 'amount / 10^exponent is the price', example: 2 }),
  })
  .openapi('Money');

const ORDER_STATUSES = ['pending', 'paid', 'expired', 'cancelled', 'failed', 'refunded'] as const;
const PROVIDERS = ['stripe', 'manual', 'development'] as const;

export const PaymentView = z
  .object({
    provider: z.enum(PROVIDERS),
    status: z.enum(['pending', 'succeeded', 'failed', 'refunded']),
    nextStep: z.enum(['redirect', 'verify', 'wait']).openapi({
      description:
        'redirect: send the customer to redirectUrl, then verify; verify: call POST /orders/{id}/payment/verify; ' +
        'wait: pay as the instructions say (quoting reference) and wait for an operator',
    }),
    redirectUrl: z.string().nullable(),
    instructions: z.string().nullable(),
    reference: z.string(),
    amount: MoneyView,
    failureReason: z.string().nullable(),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
  })
  .openapi('Payment');

export const OrderView = z
  .object({
    id: z.string().uuid(),
    status: z.enum(ORDER_STATUSES),
    kind: z
      .enum(['package', 'top_up'])
      .openapi({ description: 'package: buys packageId; top_up: buys credit' }),
    packageId: z.string().nullable().openapi({ description: 'null for a top-up' }),
    provider: z.enum(PROVIDERS),
    reference: z.string().openapi({ description: 'Quote it on a bank transfer (manual payments)' }),
    listPrice: MoneyView,
    discount: MoneyView,
    price: MoneyView,
    grants: z.object({
      tokens: z.string().regex(INTEGER).openapi({ description: "The package's tokens plus bonus tokens" }),
      bonusTokens: z.string().regex(INTEGER),
      bonusCredits: z.string().regex(INTEGER),
      credits: z.string().regex(INTEGER).openapi({ description: 'Credits a top-up buys (0 for a package)' }),
    }),
    automatic: z.boolean().openapi({ description: 'An automatic top-up, charged to the saved card' }),
    promotionCode: z.string().nullable(),
    entitlementId: z.string().uuid().nullable(),
    refunded: z
      .object({ tokens: z.string().regex(INTEGER), credits: z.string().regex(INTEGER) })
      .nullable()
      .openapi({ description: 'What a refund took back (the unused rest of the grant)' }),
    accountId: z.string().uuid(),
    expiresAt: z.string().datetime(),
    paidAt: z.string().datetime().nullable(),
    closedAt: z.string().datetime().nullable(),
    createdAt: z.string().datetime(),
    payment: nullableRef(PaymentView),
    receipt: z
      .object({
        seller: z
          .array(z.string())
          .nullable()
          .openapi({ description: 'RECEIPT_SELLER, one entry per line.' }),
        taxNote: z.string().openapi({ description: 'RECEIPT_TAX_NOTE.' }),
      })
      .openapi({ description: 'What a printed receipt says beside the order: the seller and the tax line.' }),
  })
  .openapi('Order');

export const OrderPage = z
  .object({ items: z.array(OrderView), nextCursor: z.string().nullable() })
  .openapi('OrderPage');

export const CreateOrderRequest = z
  .object({
    packageId: z.string().min(1, 'Choose a package.').max(100),
    promotionCode: z.string().trim().min(1).max(64).optional(),
    provider: z.enum(PROVIDERS, 'Use stripe, manual or development.').optional().openapi({
      description: 'Payment provider; default the first of PAYMENT_PROVIDERS',
    }),
  })
  .openapi('CreateOrderRequest');

export const CreateTopUpRequest = z
  .object({
    amount: z
      .string('Say how much to top up.')
      .regex(INTEGER, 'Integer minor units of the catalogue currency, as a string (500 is 5.00 USD).')
      .max(19, 'Too large.')
      .openapi({
        description: 'Minor units of the catalogue currency (GET /catalog/credit)',
        example: '1000',
      }),
    provider: z.enum(PROVIDERS, 'Use stripe, manual or development.').optional().openapi({
      description: 'Payment provider; default the first of PAYMENT_PROVIDERS',
    }),
    savePaymentMethod: z.boolean().optional().openapi({
      description: 'Stripe only: keep the card for automatic top-ups (PUT /me/auto-top-up)',
    }),
  })
  .openapi('CreateTopUpRequest');

export const OrdersQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  after: z.string().optional().openapi({ description: 'nextCursor of the previous page' }),
  status: z.enum(ORDER_STATUSES).optional(),
  packageId: z.string().max(100).optional(),
});

export const AdminOrdersQuery = OrdersQuery.extend({
  accountId: z.string().optional(),
  provider: z.enum(PROVIDERS).optional(),
  paymentStatus: z
    .enum(['none', 'pending', 'succeeded', 'failed', 'refunded'])
    .optional()
    .openapi({ description: 'none: payment not started' }),
});

export const OrderIdParam = z.object({ id: z.string().openapi({ param: { name: 'id', in: 'path' } }) });

export const AdminNoteRequest = z
  .object({ note: z.string().max(500).optional() })
  .openapi('AdminNoteRequest');

/** A refund moves money back: the admin must say why, and the reason is kept in the audit row. */
export const AdminRefundRequest = z
  .object({
    note: z
      .string('Say why the order is refunded (a reason is required).')
      .trim()
      .min(1, 'Say why the order is refunded (a reason is required).')
      .max(500, 'Use at most 500 characters.'),
  })
  .openapi('AdminRefundRequest');

const money = (amount: bigint, currency: string, exponent: number) => ({
  amount: amount.toString(),
  currency,
  exponent,
});

function toPaymentView(
  deps: Dependencies,
  payment: PaymentRow,
  reference: string,
): z.infer<typeof PaymentView> {
  const provider = payment.provider as (typeof PROVIDERS)[number];
  return {
    provider,
    status: payment.status,
    nextStep: provider === 'stripe' ? 'redirect' : provider === 'manual' ? 'wait' : 'verify',
    redirectUrl: payment.redirect_url,
    instructions: provider === 'manual' ? deps.config.commerce.manualInstructions : null,
    reference,
    amount: money(payment.amount, payment.currency, payment.exponent),
    failureReason: payment.failure_reason,
    createdAt: payment.created_at.toISOString(),
    updatedAt: payment.updated_at.toISOString(),
  };
}

export function toOrderView(
  deps: Dependencies,
  { order, payment }: OrderWithPayment,
): z.infer<typeof OrderView> {
  return {
    id: order.id,
    status: order.status,
    kind: order.kind,
    packageId: order.package_id,
    provider: order.provider as (typeof PROVIDERS)[number],
    reference: order.reference,
    listPrice: money(order.list_amount, order.currency, order.exponent),
    discount: money(order.discount_amount, order.currency, order.exponent),
    price: money(order.amount, order.currency, order.exponent),
    grants: {
      tokens: (order.tokens + order.bonus_tokens).toString(),
      bonusTokens: order.bonus_tokens.toString(),
      bonusCredits: order.bonus_credits.toString(),
      credits: order.credits.toString(),
    },
    automatic: order.auto_top_up_generation !== null,
    promotionCode: order.promotion_code,
    entitlementId: order.entitlement_id,
    refunded:
      order.refunded_tokens === null
        ? null
        : { tokens: order.refunded_tokens.toString(), credits: (order.refunded_credits ?? 0n).toString() },
    accountId: order.account_id,
    expiresAt: order.expires_at.toISOString(),
    paidAt: order.paid_at?.toISOString() ?? null,
    closedAt: order.closed_at?.toISOString() ?? null,
    createdAt: order.created_at.toISOString(),
    payment: payment ? toPaymentView(deps, payment, order.reference) : null,
    receipt: deps.config.commerce.receipt,
  };
}
