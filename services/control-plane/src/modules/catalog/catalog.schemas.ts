import { z } from '@hono/zod-openapi';
import {
  checkMoney,
  fitsStoredQuantity,
  INTEGER_STRING,
  MoneyWireShape,
  PROTOCOLS,
  PROVIDER_KINDS,
} from '@tollgate/schemas';

// Bounded to the Postgres column ranges, so an oversized value is refused here rather than by the database.
const INT4_MAX = 2_147_483_647;
const IntegerString = z.string().regex(INTEGER_STRING.unsigned).refine(fitsStoredQuantity, 'Too large.');
const Int4 = z.number().int().positive().max(INT4_MAX);

export const PublicModelView = z
  .object({
    alias: z.string(),
    protocols: z.array(z.enum(PROTOCOLS)),
    price: z
      .object({ input: IntegerString, output: IntegerString })
      .nullable()
      .describe('Credits per token; null when only token packages pay for this model.'),
    maxOutputTokens: z.number().int(),
    defaultMaxOutputTokens: z.number().int(),
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
  })
  .openapi('CatalogPackage');

export const ProviderView = z
  .object({
    id: z.string(),
    kind: z.enum(PROVIDER_KINDS),
    baseUrl: z.string(),
    credentialRef: z.string().nullable(),
  })
  .openapi('Provider');

export const AdminCatalogView = z
  .object({
    providers: z.array(ProviderView),
    aliases: z.array(
      PublicModelView.extend({ published: z.boolean(), providerId: z.string(), upstreamModel: z.string() }),
    ),
    packages: z.array(PublicPackageView.extend({ published: z.boolean() })),
  })
  .openapi('AdminCatalog');

export const PutAliasRequest = z
  .object({
    providerId: z.string().min(1),
    upstreamModel: z.string().min(1),
    protocols: z.array(z.enum(PROTOCOLS)).min(1),
    published: z.boolean(),
    price: z.object({ input: IntegerString, output: IntegerString }).nullable(),
    defaultMaxOutputTokens: Int4,
    maxOutputTokens: Int4,
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
  })
  .openapi('PutPackageRequest');
