import { z } from '@hono/zod-openapi';
import { INTEGER_STRING } from '@tollgate/schemas';

export const IntegerString = z.string().regex(INTEGER_STRING.unsigned).openapi({ example: '125000' });
export const AmountsView = z.object({ tokens: IntegerString, credits: IntegerString }).openapi('Amounts');

export const BalanceView = z
  .object({
    remaining: AmountsView.describe('Spendable now: unexpired entitlement tokens, and credit.'),
    reserved: AmountsView.describe('Held by requests in flight.'),
  })
  .openapi('Balance');

export const EntitlementView = z
  .object({
    id: z.string().uuid(),
    packageId: z.string().nullable(),
    granted: IntegerString,
    remaining: IntegerString,
    reserved: IntegerString,
    expiresAt: z.string().nullable(),
    expired: z.boolean(),
    aliases: z.array(z.string()).nullable(),
    ceilings: z.object({
      maxOutputTokens: z.number().int().nullable(),
      requestsPerMinute: z.number().int().nullable(),
      concurrency: z.number().int().nullable(),
    }),
    createdAt: z.string(),
  })
  .openapi('Entitlement');

export const ActivityItemView = z
  .object({
    id: z.string().uuid(),
    keyId: z.string().uuid(),
    alias: z.string(),
    surface: z.string(),
    status: z.enum(['reserved', 'settled', 'released', 'held']),
    outcome: z.string().nullable(),
    httpStatus: z.number().int().nullable(),
    inputTokens: IntegerString.nullable(),
    outputTokens: IntegerString.nullable(),
    charged: AmountsView,
    writtenOff: AmountsView,
    createdAt: z.string(),
    finishedAt: z.string().nullable(),
  })
  .openapi('ActivityItem');

export const ReceiptView = z
  .object({
    requestId: z.string().uuid().describe("The call's id: its answer's x-request-id."),
    keyId: z.string().uuid(),
    alias: z.string(),
    surface: z.enum(['messages', 'responses', 'chat_completions']),
    state: z.enum(['reserved', 'settled', 'released', 'held']),
    outcome: z.string().nullable(),
    httpStatus: z.number().int().nullable(),
    holdReason: z.string().nullable(),
    usage: z
      .record(z.string(), IntegerString)
      .nullable()
      .describe(
        'The token parts the settlement charged (inputTokens, outputTokens, ...); null unless settled.',
      ),
    prices: z
      .record(z.string(), IntegerString)
      .nullable()
      .describe(
        'Credits per token of each part, fixed when the call was reserved; null when no credit was reserved.',
      ),
    charged: AmountsView,
    writtenOff: AmountsView,
    drawn: z
      .array(
        z.object({
          source: z.enum(['entitlement', 'credit']),
          entitlementId: z.string().nullable(),
          packageId: z.string().nullable(),
          amount: IntegerString.describe('Tokens of an entitlement, credits of the balance.'),
        }),
      )
      .describe("The ledger's settle rows of the call."),
    createdAt: z.string(),
    finishedAt: z.string().nullable(),
  })
  .openapi('Receipt');

export const ActivityPage = z
  .object({ items: z.array(ActivityItemView), nextCursor: z.string().nullable() })
  .openapi('ActivityPage');

/** An admin's view of a call: also which upstream served it (never shown to the customer). */
export const AdminActivityPage = z
  .object({
    items: z.array(
      ActivityItemView.extend({
        route: z
          .object({ providerId: z.string(), upstreamModel: z.string(), attempts: z.number().int() })
          .nullable()
          .describe(
            'The upstream that answered (or was tried last) and how many were tried; null for an alias with one upstream.',
          ),
      }),
    ),
    nextCursor: z.string().nullable(),
  })
  .openapi('AdminActivityPage');

export const ActivityQuery = z.object({
  keyId: z.string().uuid().optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(200).optional(),
});

const DAY_MS = 86_400_000;
const isoDay = (date: Date) => date.toISOString().slice(0, 10);
/** A real calendar day: 2026-02-31 is refused, not read as March 3. */
const Day = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date YYYY-MM-DD')
  .refine((value) => {
    const date = new Date(`${value}T00:00:00Z`);
    return !Number.isNaN(date.getTime()) && isoDay(date) === value;
  }, 'must be a real date YYYY-MM-DD');
export const SUMMARY_DEFAULT_DAYS = 30;
export const UsageSummaryQuery = z.object({
  from: Day.optional().openapi({
    description: `First day (in the account's timezone), inclusive; default ${SUMMARY_DEFAULT_DAYS - 1} days before \`to\`.`,
  }),
  to: Day.optional().openapi({ description: 'Last day, inclusive; default today (UTC).' }),
  by: z
    .enum(['alias', 'key'])
    .optional()
    .openapi({ description: 'Group each day by alias (default) or by key.' }),
});

/** The range a summary covers: the last 30 days (today included) unless the query names one. */
export function summaryRange(
  query: { from?: string | undefined; to?: string | undefined },
  now = new Date(),
) {
  const to = query.to ?? isoDay(now);
  const from =
    query.from ??
    isoDay(new Date(new Date(`${to}T00:00:00Z`).getTime() - (SUMMARY_DEFAULT_DAYS - 1) * DAY_MS));
  return { from, to };
}

export const UsageSummaryRowView = z
  .object({
    day: z.string(),
    alias: z.string().nullable().describe('The alias; null in a summary by key.'),
    keyId: z.string().optional().describe('The key, in a summary by key.'),
    requests: z.number().int(),
    inputTokens: IntegerString.describe('Input read neither from nor into a cache.'),
    outputTokens: IntegerString.describe('Output, reasoning included.'),
    cacheReadTokens: IntegerString,
    cacheWriteTokens: IntegerString.describe('Five-minute cache writes.'),
    cacheWrite1hTokens: IntegerString.describe('One-hour cache writes.'),
    charged: AmountsView,
  })
  .openapi('UsageSummaryRow');
