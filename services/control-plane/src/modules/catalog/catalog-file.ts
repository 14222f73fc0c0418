import { readFile } from 'node:fs/promises';
import {
  checkMoney,
  currencyExponent,
  DEFAULT_PROVIDER_SECRET_PREFIX,
  fitsStoredQuantity,
  INTEGER_STRING,
  MoneyWireShape,
  PACKAGE_COUNTS,
  PACKAGE_RATE_MAX,
  PROTOCOLS,
  PROVIDER_KINDS,
  providerCredentialProblem,
  UPSTREAM_PRIORITY_MAX,
  UPSTREAM_WEIGHT_MAX,
  UPSTREAMS_MAX,
} from '@tollgate/schemas';
import { parse } from 'yaml';
import { z } from 'zod';
import { DECIMAL, decimalToMinor, parseDecimal } from './credit-value.ts';

/**
 * The catalogue file operators keep in git (YAML): providers, model aliases and packages.
 * `${NAME}` and `${NAME:-fallback}` in string values are read from the environment, so base URLs
 * can differ per deployment. Secrets never appear here: a provider names its credential
 * (`credential: TOLLGATE_PROVIDER_ANTHROPIC`), a name inside PROVIDER_SECRET_PREFIX, and the gateway
 * reads that name from its secrets file or environment.
 */
const Id = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, 'lower-case letters, digits, dot, dash, underscore');
const Count = z.union([
  z.string().regex(INTEGER_STRING.positive).refine(fitsStoredQuantity, 'Too large.'),
  z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
]);
const Price = z.union([
  z.string().regex(INTEGER_STRING.unsigned).refine(fitsStoredQuantity, 'Too large.'),
  z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
]);
const Positive = z.number().int().positive();
const PackageRate = z.number().int().min(1).max(PACKAGE_RATE_MAX);

const CredentialName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/);

/** Credits per token of each usage part and per call; input and output required (docs/pricing.md). */
const PartPrices = z
  .object({
    input: Price,
    output: Price,
    cache_read: Price.optional(),
    cache_write: Price.optional(),
    cache_write_1h: Price.optional(),
    request: Price.optional(),
  })
  .strict();
export type FilePartPrices = z.infer<typeof PartPrices>;

/**
 * What one credit is worth in the catalogue currency, and the bounds of a top-up, as decimals of
 * that currency (docs/payments.md#money). Without it, figures show credits only and no top-up is
 * offered.
 */
const CreditSection = z
  .object({
    currency: z.string().refine((code) => currencyExponent(code) !== null, 'not an ISO 4217 currency'),
    value: z
      .string()
      .regex(DECIMAL, 'a decimal such as "0.000001"')
      .refine((text) => parseDecimal(text).units > 0n, 'must be above zero'),
    top_up: z
      .object({
        min: z.string().regex(DECIMAL, 'a decimal such as "5.00"'),
        max: z.string().regex(DECIMAL, 'a decimal such as "500.00"'),
      })
      .strict()
      .optional(),
  })
  .strict()
  .superRefine((credit, context) => {
    const exponent = currencyExponent(credit.currency);
    if (exponent === null || !credit.top_up) return;
    const min = decimalToMinor(credit.top_up.min, exponent);
    const max = decimalToMinor(credit.top_up.max, exponent);
    for (const [side, value] of [
      ['min', min],
      ['max', max],
    ] as const) {
      if (value === null)
        context.addIssue({
          code: 'custom',
          path: ['top_up', side],
          message: `more decimals than ${credit.currency} has`,
        });
      else if (value <= 0n || !fitsStoredQuantity(String(value)))
        context.addIssue({ code: 'custom', path: ['top_up', side], message: 'out of range' });
    }
    if (min !== null && max !== null && min > max)
      context.addIssue({ code: 'custom', path: ['top_up', 'min'], message: 'above max' });
  });
export type CreditSection = z.infer<typeof CreditSection>;

export const CatalogFile = z
  .object({
    credit: CreditSection.optional(),
    providers: z
      .array(
        z
          .object({
            id: Id,
            kind: z.enum(PROVIDER_KINDS),
            base_url: z.string().url(),
            /** One credential name, or a pool of them the gateway spreads calls over. */
            credential: z
              .union([CredentialName, z.array(CredentialName).min(1).max(16)])
              .nullable()
              .default(null),
          })
          .strict(),
      )
      .default([]),
    aliases: z
      .array(
        z
          .object({
            alias: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/),
            /** The one-upstream shorthand; `upstreams` instead lists several (docs/routing.md). */
            provider: Id.optional(),
            upstream_model: z.string().min(1).optional(),
            upstreams: z
              .array(
                z
                  .object({
                    provider: Id,
                    upstream_model: z.string().min(1),
                    priority: z.number().int().min(0).max(UPSTREAM_PRIORITY_MAX).default(0),
                    weight: z.number().int().positive().max(UPSTREAM_WEIGHT_MAX).default(1),
                    /** The operator's own cost price of this upstream (docs/routing.md, margin). */
                    cost: PartPrices.optional(),
                    max_concurrency: z.number().int().positive().optional(),
                    requests_per_minute: z.number().int().positive().optional(),
                  })
                  .strict(),
              )
              .min(1)
              .max(UPSTREAMS_MAX)
              .optional(),
            protocols: z.array(z.enum(PROTOCOLS)).min(1),
            published: z.boolean().default(true),
            /**
             * Credits per token of each usage part and per call; omit to make the alias payable only
             * from token packages. Only input and output are required (docs/pricing.md).
             */
            price: PartPrices.nullable().default(null),
            /** The shorthand upstream's cost price; with `upstreams`, each carries its own. */
            cost: PartPrices.optional(),
            default_max_output_tokens: Positive,
            max_output_tokens: Positive,
            /** Units of a weighted package one token of this alias costs (docs/pricing.md, R2b). */
            package_rate: PackageRate.default(1),
          })
          .strict(),
      )
      .default([]),
    packages: z
      .array(
        z
          .object({
            id: Id,
            name: z.string().min(1),
            tokens: Count,
            validity_days: Positive.nullable().default(null),
            aliases: z.array(z.string()).nullable().default(null),
            max_output_tokens: Positive.nullable().default(null),
            requests_per_minute: Positive.nullable().default(null),
            concurrency: Positive.nullable().default(null),
            // The file also takes a plain YAML number as the amount.
            price: z
              .object({ ...MoneyWireShape, amount: Price })
              .strict()
              .superRefine(checkMoney),
            published: z.boolean().default(true),
            /** 'tokens': every token counts one; 'weighted': a token counts its alias's package_rate. */
            counts: z.enum(PACKAGE_COUNTS).default('tokens'),
          })
          .strict(),
      )
      .default([]),
  })
  .strict();
export type CatalogFile = z.infer<typeof CatalogFile>;

export class CatalogFileError extends Error {
  constructor(file: string, problems: string[]) {
    super(`catalogue ${file} is invalid:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.name = 'CatalogFileError';
  }
}

/** Replaces `${NAME}` / `${NAME:-fallback}` in every string of the parsed document. */
function interpolate(value: unknown, env: Record<string, string | undefined>, missing: Set<string>): unknown {
  if (typeof value === 'string') {
    return value.replace(
      /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g,
      (_match, name: string, fallback?: string) => {
        const found = env[name];
        if (found !== undefined && found !== '') return found;
        if (fallback !== undefined) return fallback;
        missing.add(name);
        return '';
      },
    );
  }
  if (Array.isArray(value)) return value.map((item) => interpolate(item, env, missing));
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, interpolate(item, env, missing)]),
    );
  }
  return value;
}

export interface FileUpstream {
  provider: string;
  upstream_model: string;
  priority: number;
  weight: number;
  cost?: FilePartPrices | undefined;
  max_concurrency?: number | undefined;
  requests_per_minute?: number | undefined;
}

/** An alias's upstreams as written: its list, or the shorthand as a list of one (empty if half given). */
export function fileUpstreams(alias: CatalogFile['aliases'][number]): FileUpstream[] {
  if (alias.upstreams) return alias.upstreams;
  if (alias.provider === undefined || alias.upstream_model === undefined) return [];
  return [
    {
      provider: alias.provider,
      upstream_model: alias.upstream_model,
      priority: 0,
      weight: 1,
      cost: alias.cost,
    },
  ];
}

/** A provider's credential names as written: none, one, or a pool. */
export function credentialNames(credential: string | string[] | null): string[] {
  if (credential === null) return [];
  return typeof credential === 'string' ? [credential] : credential;
}

/** Cross-references the schema alone cannot check, and credential names outside the namespace. */
function checkReferences(catalog: CatalogFile, credentialPrefix: string): string[] {
  const problems: string[] = [];
  for (const provider of catalog.providers) {
    const names = credentialNames(provider.credential);
    for (const name of names) {
      const problem = providerCredentialProblem(name, credentialPrefix);
      if (problem) problems.push(`providers.${provider.id}.credential: ${problem}`);
    }
    if (new Set(names).size !== names.length) {
      problems.push(`providers.${provider.id}.credential: a credential is named twice`);
    }
  }
  const providers = new Map(catalog.providers.map((provider) => [provider.id, provider]));
  const aliases = new Set<string>();
  for (const alias of catalog.aliases) {
    if (aliases.has(alias.alias)) problems.push(`aliases: ${alias.alias} is declared twice`);
    aliases.add(alias.alias);
    const shorthand = alias.provider !== undefined || alias.upstream_model !== undefined;
    if (alias.upstreams !== undefined && alias.cost !== undefined) {
      problems.push(`aliases.${alias.alias}.cost: with upstreams, give each upstream its cost`);
    }
    if (shorthand === (alias.upstreams !== undefined)) {
      problems.push(`aliases.${alias.alias}: give either provider and upstream_model, or upstreams`);
      continue;
    }
    const upstreams = fileUpstreams(alias);
    if (upstreams.length === 0) {
      problems.push(`aliases.${alias.alias}: provider and upstream_model go together`);
      continue;
    }
    const seen = new Set<string>();
    for (const upstream of upstreams) {
      if (!providers.has(upstream.provider)) {
        problems.push(`aliases.${alias.alias}: unknown provider ${upstream.provider}`);
      }
      const id = `${upstream.provider}/${upstream.upstream_model}`;
      if (seen.has(id)) problems.push(`aliases.${alias.alias}: upstream ${id} is listed twice`);
      seen.add(id);
    }
    if (alias.default_max_output_tokens > alias.max_output_tokens) {
      problems.push(`aliases.${alias.alias}: default_max_output_tokens is above max_output_tokens`);
    }
  }
  for (const pack of catalog.packages) {
    for (const alias of pack.aliases ?? []) {
      if (!aliases.has(alias)) problems.push(`packages.${pack.id}: unknown alias ${alias}`);
    }
  }
  return problems;
}

export function parseCatalog(
  text: string,
  file: string,
  env: Record<string, string | undefined>,
  credentialPrefix: string = DEFAULT_PROVIDER_SECRET_PREFIX,
): CatalogFile {
  let document: unknown;
  try {
    document = parse(text) ?? {};
  } catch (error) {
    throw new CatalogFileError(file, [error instanceof Error ? error.message : 'not valid YAML']);
  }
  const missing = new Set<string>();
  const interpolated = interpolate(document, env, missing);
  if (missing.size > 0) {
    throw new CatalogFileError(
      file,
      [...missing].map((name) => `\${${name}} is not set and has no fallback`),
    );
  }
  const result = CatalogFile.safeParse(interpolated);
  if (!result.success) {
    throw new CatalogFileError(
      file,
      result.error.issues.map((issue) => `${issue.path.map(String).join('.')}: ${issue.message}`),
    );
  }
  const problems = checkReferences(result.data, credentialPrefix);
  if (problems.length > 0) throw new CatalogFileError(file, problems);
  return result.data;
}

export async function loadCatalogFile(
  file: string,
  env: Record<string, string | undefined>,
  credentialPrefix: string = DEFAULT_PROVIDER_SECRET_PREFIX,
): Promise<CatalogFile> {
  return parseCatalog(await readFile(file, 'utf8'), file, env, credentialPrefix);
}
