import { z } from '@hono/zod-openapi';
import type { CapStatus } from './spend-caps.service.ts';
import { CAP_PERIODS } from './windows.ts';

export const CapPeriodSchema = z.enum(CAP_PERIODS).openapi({
  description:
    '5h: the last 5 hours (rolling); day, week (Monday first), month: calendar, in the account timezone.',
});
export const CapUnitSchema = z.enum(['credits', 'tokens']).openapi({
  description:
    'credits: the credit value of each call at its alias prices, whoever pays; tokens: input + output.',
});

export const SetSpendCapRequest = z
  .object({
    keyId: z
      .string()
      .nullable()
      .openapi({ description: "One of the account's keys, or null for every key of the account together." }),
    unit: CapUnitSchema,
    period: CapPeriodSchema,
    limit: z
      .string()
      .regex(/^[1-9][0-9]{0,17}$/, 'Use a positive whole number as a string, e.g. "1000".')
      .nullable()
      .openapi({
        description: 'The most the window may count; null removes your cap of this unit and period.',
      }),
  })
  .strict()
  .openapi('SetSpendCapRequest');

export const CapTimeZoneRequest = z
  .object({
    timeZone: z.string().max(64).openapi({ description: 'An IANA timezone name, e.g. Europe/Paris.' }),
  })
  .strict()
  .openapi('CapTimeZoneRequest');

export const SpendCapView = z
  .object({
    id: z.string().uuid(),
    keyId: z.string().uuid().nullable().openapi({ description: 'Null: the whole account.' }),
    setBy: z.enum(['customer', 'reseller', 'admin']),
    unit: CapUnitSchema,
    period: CapPeriodSchema,
    timeZone: z.string(),
    limit: z.string(),
    used: z
      .string()
      .openapi({ description: 'Counted in the window now; calls in flight at their estimate.' }),
    remaining: z.string(),
    windowStart: z.string().datetime(),
    resetsAt: z.string().datetime().nullable().openapi({
      description:
        'Calendar windows: when the window ends. 5h: when the oldest call counted now leaves it (null: nothing counted).',
    }),
  })
  .openapi('SpendCap');

export const SpendCapsView = z
  .object({ timeZone: z.string(), caps: z.array(SpendCapView) })
  .openapi('SpendCaps');

export function toSpendCapView(cap: CapStatus): z.infer<typeof SpendCapView> {
  return {
    id: cap.id,
    keyId: cap.keyId,
    setBy: cap.setBy,
    unit: cap.unit,
    period: cap.period,
    timeZone: cap.timeZone,
    limit: cap.limit.toString(),
    used: cap.used.toString(),
    remaining: cap.remaining.toString(),
    windowStart: cap.windowStart.toISOString(),
    resetsAt: cap.resetsAt?.toISOString() ?? null,
  };
}

export function toSpendCapsView(status: {
  timeZone: string;
  caps: CapStatus[];
}): z.infer<typeof SpendCapsView> {
  return { timeZone: status.timeZone, caps: status.caps.map(toSpendCapView) };
}
