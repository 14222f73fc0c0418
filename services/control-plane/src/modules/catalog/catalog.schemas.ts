import { z } from '@hono/zod-openapi';
import { INTEGER_STRING, MoneyWireSchema, PROTOCOLS } from '@tollgate/schemas';

const IntegerString = z.string().regex(INTEGER_STRING.unsigned);

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
export const MoneyView = z.object(MoneyWireSchema.shape).openapi('Money');

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
    kind: z.enum(['anthropic', 'openai']),
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
    defaultMaxOutputTokens: z.number().int().positive(),
    maxOutputTokens: z.number().int().positive(),
  })
  .openapi('PutAliasRequest');

export const PutProviderRequest = z
  .object({
    kind: z.enum(['anthropic', 'openai']),
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
    tokens: z.string().regex(INTEGER_STRING.positive),
    validityDays: z.number().int().positive().nullable(),
    aliases: z.array(z.string()).nullable(),
    ceilings: z.object({
      maxOutputTokens: z.number().int().positive().nullable(),
      requestsPerMinute: z.number().int().positive().nullable(),
      concurrency: z.number().int().positive().nullable(),
    }),
    price: MoneyWireSchema,
    published: z.boolean(),
  })
  .openapi('PutPackageRequest');
