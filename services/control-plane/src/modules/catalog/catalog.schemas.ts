import { z } from '@hono/zod-openapi';
import {
  checkMoney,
  fitsStoredQuantity,
  INTEGER_STRING,
  MoneyWireShape,
  PACKAGE_COUNTS,
  PACKAGE_RATE_MAX,
  PROTOCOLS,
  PROVIDER_KINDS,
  UPSTREAM_PRIORITY_MAX,
  UPSTREAM_WEIGHT_MAX,
  UPSTREAMS_MAX,
} from '@tollgate/schemas';
import { nullableRef } from '../../http/openapi.ts';

// Bounded to the Postgres column ranges, so an oversized value is refused here rather than by the database.
const INT4_MAX = 2_147_483_647;
const IntegerString = z.string().regex(INTEGER_STRING.unsigned).refine(fitsStoredQuantity, 'Too large.');
const Int4 = z.number().int().positive().max(INT4_MAX);
const PackageRate = z
  .string()
  .regex(INTEGER_STRING.positive)
  // Refinements run after a failed regex too: only a whole number reaches BigInt.
  .refine(
    (value) => !INTEGER_STRING.positive.test(value) || BigInt(value) <= BigInt(PACKAGE_RATE_MAX),
    `At most ${PACKAGE_RATE_MAX}.`,
  );
const PackageCounts = z
  .enum(PACKAGE_COUNTS)
  .describe(
    "How the package's tokens count: `tokens`, one per token of any alias; `weighted`, each token of an alias counts the alias's packageRate.",
  );

export const ModelPriceView = z
  .object({
    input: IntegerString.describe('Per input token read neither from nor into a cache.'),
    output: IntegerString.describe('Per output token, reasoning included.'),
    cacheRead: IntegerString.describe('Per input token read from the prompt cache.'),
    cacheWrite: IntegerString.describe('Per input token written to the cache for five minutes.'),
    cacheWrite1h: IntegerString.describe('Per input token written to the cache for an hour.'),
    request: IntegerString.describe('Per call paid from credit.'),
  })
  .openapi('ModelPrice');

/** Credits per token of each usage part and per call, as an admin writes them. */
const PartPricesRequest = z.object({
  input: IntegerString,
  output: IntegerString,
  cacheRead: IntegerString.optional().describe('Default: the input price.'),
  cacheWrite: IntegerString.optional().describe('Five-minute cache writes. Default: the input price.'),
  cacheWrite1h: IntegerString.optional().describe('One-hour cache writes. Default: the cacheWrite price.'),
  request: IntegerString.optional().describe('Per call. Default: 0.'),
});

export const PublicModelView = z
  .object({
    alias: z.string(),
    protocols: z.array(z.enum(PROTOCOLS)),
    price: nullableRef(ModelPriceView).describe(
      'Credits per token of each usage part, and per call; null when only token packages pay for this model.',
    ),
    maxOutputTokens: z.number().int(),
    defaultMaxOutputTokens: z.number().int(),
    packageRate: PackageRate.describe(
      'Units of a weighted package (counts: weighted) one token of this model costs, whatever its part.',
    ),
  })
  .openapi('CatalogModel');

// The shared wire shape, wrapped by this module's zod so it can carry its OpenAPI name.
export const MoneyView = z.object(MoneyWireShape).openapi('Money');

export const PublicPackageView = z
  .object({
    id: z.string(),
    name: z.string(),
    tokens: IntegerString,
    validityDays: z.number().int().nullable(),
    aliases: z.array(z.string()).nullable(),
    ceilings: z.object({
      maxOutputTokens: z.number().int().nullable(),
      requestsPerMinute: z.number().int().nullable(),
      concurrency: z.number().int().nullable(),
    }),
    price: MoneyView,
    counts: PackageCounts,
  })
  .openapi('CatalogPackage');

export const ProviderView = z
  .object({
    id: z.string(),
    kind: z.enum(PROVIDER_KINDS),
    baseUrl: z.string(),
    /** Its first credential name (null: none). */
    credentialRef: z.string().nullable(),
    /** Every credential name of its pool, the first included (empty: none). */
    credentialRefs: z.array(z.string()),
  })
  .openapi('Provider');

export const UpstreamView = z
  .object({
    providerId: z.string().min(1),
    upstreamModel: z.string().min(1),
    priority: z
      .number()
      .int()
      .min(0)
      .max(UPSTREAM_PRIORITY_MAX)
      .describe('Lower first: the next priority serves only when every upstream of this one failed.'),
    weight: z
      .number()
      .int()
      .positive()
      .max(UPSTREAM_WEIGHT_MAX)
      .describe('Share of the calls among the upstreams of one priority.'),
    cost: nullableRef(ModelPriceView).describe(
      "The operator's own cost price of this upstream, in credits like the alias's price (the margin report); null: not known.",
    ),
    maxConcurrency: z
      .number()
      .int()
      .positive()
      .nullable()
      .optional()
      .describe(
        "The provider's concurrency limit on the operator's account: calls at once across all gateways; at it, the upstream is skipped (null: none).",
      ),
    requestsPerMinute: z
      .number()
      .int()
      .positive()
      .nullable()
      .optional()
      .describe(
        "The provider's request limit on the operator's account: calls per minute across all gateways; at it, the upstream is skipped (null: none).",
      ),
  })
  .openapi('AliasUpstream');

export const AdminCatalogView = z
  .object({
    providers: z.array(ProviderView),
    aliases: z.array(
      PublicModelView.extend({
        published: z.boolean(),
        providerId: z.string().describe('The first upstream (lowest priority, first listed).'),
        upstreamModel: z.string(),
        upstreams: z.array(UpstreamView),
      }),
    ),
    packages: z.array(PublicPackageView.extend({ published: z.boolean() })),
    managedByFile: z
      .object({
        file: z.string().nullable(),
        providers: z.array(z.string()),
        aliases: z.array(z.string()),
        packages: z.array(z.string()),
      })
      .openapi({
        description:
          'The entries the catalogue file holds: edited in the file only (the admin routes refuse them).',
      }),
  })
  .openapi('AdminCatalog');

export const PutAliasRequest = z
  .object({
    providerId: z.string().min(1).optional().describe('One upstream: its provider (or give upstreams).'),
    upstreamModel: z.string().min(1).optional(),
    upstreams: z
      .array(
        UpstreamView.omit({ cost: true })
          .partial({ priority: true, weight: true })
          .extend({ cost: PartPricesRequest.nullable().optional() }),
      )
      .min(1)
      .max(UPSTREAMS_MAX)
      .optional()
      .describe('Several upstreams, tried by priority then weight (docs/routing.md).'),
    cost: PartPricesRequest.nullable()
      .optional()
      .describe("The one upstream's cost price (with upstreams, each carries its own)."),
    protocols: z.array(z.enum(PROTOCOLS)).min(1),
    published: z.boolean(),
    price: PartPricesRequest.nullable(),
    defaultMaxOutputTokens: Int4,
    maxOutputTokens: Int4,
    packageRate: PackageRate.optional().describe(
      'Units of a weighted package one token costs (docs/pricing.md). Default: 1.',
    ),
  })
  .openapi('PutAliasRequest');

export const PutProviderRequest = z
  .object({
    kind: z.enum(PROVIDER_KINDS),
    baseUrl: z.string().url(),
    credentialRef: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
      .nullable(),
    /**
     * A pool of credential names the gateway spreads calls over (docs/routing.md); when given,
     * credentialRef is null or the pool's first name.
     */
    credentialRefs: z
      .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/))
      .min(1)
      .max(16)
      .optional(),
  })
  .openapi('PutProviderRequest');

export const PutPackageRequest = z
  .object({
    name: z.string().min(1),
    tokens: z.string().regex(INTEGER_STRING.positive).refine(fitsStoredQuantity, 'Too large.'),
    validityDays: Int4.nullable(),
    aliases: z.array(z.string()).nullable(),
    ceilings: z.object({
      maxOutputTokens: Int4.nullable(),
      requestsPerMinute: Int4.nullable(),
      concurrency: Int4.nullable(),
    }),
    // The amount is a Postgres bigint: bounded here, not by the database. The exponent is the currency's own.
    price: z.object({ ...MoneyWireShape, amount: IntegerString }).superRefine(checkMoney),
    published: z.boolean(),
    counts: PackageCounts.optional().describe('Default: tokens. Entitlements already granted keep theirs.'),
  })
  .openapi('PutPackageRequest');

export const CreditValueView = z
  .object({
    value: z
      .object({
        currency: z.string().openapi({ example: 'USD' }),
        exponent: z
          .number()
          .int()
          .openapi({ description: "The currency's ISO 4217 minor-unit digits", example: 2 }),
        perCredit: z.string().openapi({
          description:
            'What one credit is worth in the currency, an exact decimal: money = credits × perCredit ' +
            '(docs/payments.md#money says how the dashboard rounds it for display).',
          example: '0.000001',
        }),
      })
      .nullable()
      .openapi({ description: 'null: the catalogue sets no money value; figures are in credits only.' }),
    topUp: z
      .object({
        min: MoneyView,
        max: MoneyView,
      })
      .nullable()
      .openapi({ description: 'The bounds of a top-up (POST /top-ups); null: top-ups are not offered.' }),
  })
  .openapi('CreditValue');
