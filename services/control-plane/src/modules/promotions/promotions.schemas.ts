import { z } from '@hono/zod-openapi';
import { fitsStoredQuantity, MoneySchema } from '@tollgate/schemas';
import { nullableRef } from '../../http/openapi.ts';
import { MoneyView } from '../orders/orders.schemas.ts';
import type { PromotionRow } from './pricing.ts';

const INTEGER = /^(?:0|[1-9][0-9]*)$/;
const KINDS = ['percent_off', 'amount_off', 'bonus_tokens', 'bonus_credit'] as const;
// Integer minor units as a string, with currency and exponent (the shared wire schema).
const MoneyInput = MoneySchema;
const limit = z.number().int().min(1).max(1_000_000_000);

export const PreviewRequest = z
  .object({
    code: z.string().trim().min(1, 'Enter a code.').max(64),
    packageId: z.string().min(1, 'Choose a package.').max(100),
  })
  .openapi('PromotionPreviewRequest');

export const PreviewView = z
  .object({
    code: z.string(),
    packageId: z.string(),
    kind: z.enum(KINDS),
    priceBefore: MoneyView,
    discount: MoneyView,
    priceAfter: MoneyView,
    bonusTokens: z.string().regex(INTEGER),
    bonusCredits: z.string().regex(INTEGER),
  })
  .openapi('PromotionPreview');

export const CreatePromotionRequest = z
  .object({
    code: z
      .string()
      .trim()
      .regex(/^[A-Za-z0-9_-]{1,64}$/, 'Use 1 to 64 letters, digits, - or _.')
      .optional()
      .openapi({ description: 'Omitted: a random code of 16 characters (80 bits) that cannot be guessed' }),
    kind: z.enum(KINDS),
    percentOff: z.number().int().min(1).max(100).optional().openapi({ description: 'percent_off: 1 to 100' }),
    amountOff: MoneyInput.optional().openapi({
      description: 'amount_off: applies only to prices in its currency',
    }),
    bonus: z
      .string()
      .regex(/^[1-9][0-9]*$/, 'A positive integer string.')
      .refine(fitsStoredQuantity, 'Too large.')
      .optional()
      .openapi({
        description: 'bonus_tokens: tokens added to the entitlement; bonus_credit: credit units granted',
      }),
    minAmount: MoneyInput.optional().openapi({ description: 'Lowest package price the code applies to' }),
    startsAt: z.string().datetime().optional(),
    endsAt: z.string().datetime().optional(),
    packageIds: z
      .array(z.string().min(1).max(100))
      .min(1)
      .optional()
      .openapi({ description: 'Omitted: every package' }),
    totalLimit: limit.optional(),
    perAccountLimit: limit.optional(),
    active: z.boolean().optional(),
  })
  .superRefine((value, context) => {
    const need = (field: 'percentOff' | 'amountOff' | 'bonus', kind: string) => {
      if (value[field] === undefined)
        context.addIssue({ code: 'custom', path: [field], message: `Required for ${kind}.` });
    };
    if (value.kind === 'percent_off') need('percentOff', value.kind);
    if (value.kind === 'amount_off') need('amountOff', value.kind);
    if (value.kind === 'bonus_tokens' || value.kind === 'bonus_credit') need('bonus', value.kind);
    if (value.startsAt && value.endsAt && value.endsAt <= value.startsAt)
      context.addIssue({ code: 'custom', path: ['endsAt'], message: 'Must be after startsAt.' });
  })
  .openapi('CreatePromotionRequest');

export const UpdatePromotionRequest = z
  .object({
    active: z.boolean().optional(),
    endsAt: z.string().datetime().nullable().optional(),
    totalLimit: limit.nullable().optional(),
    perAccountLimit: limit.nullable().optional(),
  })
  .openapi('UpdatePromotionRequest');

export const PromotionView = z
  .object({
    id: z.string().uuid(),
    code: z.string(),
    kind: z.enum(KINDS),
    percentOff: z.number().int().nullable(),
    amountOff: nullableRef(MoneyView),
    minAmount: nullableRef(MoneyView),
    bonus: z.string().nullable(),
    startsAt: z.string().datetime().nullable(),
    endsAt: z.string().datetime().nullable(),
    packageIds: z.array(z.string()).nullable(),
    totalLimit: z.number().int().nullable(),
    perAccountLimit: z.number().int().nullable(),
    redemptionsTaken: z
      .number()
      .int()
      .openapi({ description: 'Held by unpaid orders plus consumed by paid ones' }),
    active: z.boolean(),
    createdAt: z.string().datetime(),
  })
  .openapi('Promotion');

export const PromotionPage = z
  .object({ items: z.array(PromotionView), nextCursor: z.string().nullable() })
  .openapi('PromotionPage');

export const PromotionsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  after: z.string().optional().openapi({ description: 'nextCursor of the previous page' }),
  active: z.enum(['true', 'false']).optional(),
});

export function toPromotionView(row: PromotionRow): z.infer<typeof PromotionView> {
  const money = (amount: bigint | null) =>
    amount === null || row.currency === null
      ? null
      : { amount: amount.toString(), currency: row.currency, exponent: row.exponent ?? 0 };
  return {
    id: row.id,
    code: row.code,
    kind: row.kind,
    percentOff: row.percent_off,
    amountOff: money(row.amount_off),
    minAmount: money(row.min_amount),
    bonus: row.bonus?.toString() ?? null,
    startsAt: row.starts_at?.toISOString() ?? null,
    endsAt: row.ends_at?.toISOString() ?? null,
    packageIds: row.package_ids,
    totalLimit: row.total_limit,
    perAccountLimit: row.per_account_limit,
    redemptionsTaken: row.held,
    active: row.active,
    createdAt: row.created_at.toISOString(),
  };
}
