import { AppError } from '@tollgate/errors';
import {
  type AliasPrice,
  type AliasPriceInput,
  completePrice,
  currencyExponent,
  type GatewayCatalog,
  type GatewayProvider,
  type GatewayUpstream,
  type MoneyWire,
  type PackageCounts,
  type Protocol,
  type ProviderKind,
  providerCredentialProblem,
} from '@tollgate/schemas';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { Dependencies } from '../../deps.ts';
import { type Actor, recordAudit } from '../audit/audit.service.ts';
import * as repository from './catalog.repository.ts';
import {
  type CatalogFile,
  type CreditSection,
  credentialNames,
  type FilePartPrices,
  fileUpstreams,
} from './catalog-file.ts';
import { decimalToMinor } from './credit-value.ts';

/** A published model as customers see it: never an upstream id, provider name or URL. */
export interface PublicModel {
  alias: string;
  protocols: Protocol[];
  /** Credits per token of each usage part and per call; null when only token packages pay for it. */
  price: AliasPrice | null;
  maxOutputTokens: number;
  defaultMaxOutputTokens: number;
  /** Units of a weighted package one token costs (R2b). */
  packageRate: string;
}

export interface PublicPackage {
  id: string;
  name: string;
  tokens: string;
  validityDays: number | null;
  /** Aliases the package's tokens can be spent on; null = every alias. */
  aliases: string[] | null;
  ceilings: { maxOutputTokens: number | null; requestsPerMinute: number | null; concurrency: number | null };
  price: MoneyWire;
  counts: PackageCounts;
}

/**
 * Upserts every provider, alias and package of the catalogue file in one transaction. Entries
 * that exist only in the database (created by an admin) are left as they are.
 */
export async function syncCatalog(deps: Dependencies, catalog: CatalogFile): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    for (const provider of catalog.providers) {
      await repository.upsertProvider(trx, {
        id: provider.id,
        kind: provider.kind,
        base_url: provider.base_url,
        ...credentialColumns(credentialNames(provider.credential)),
      });
    }
    for (const alias of catalog.aliases) {
      const upstreams = fileUpstreams(alias).map((upstream) => ({
        providerId: upstream.provider,
        upstreamModel: upstream.upstream_model,
        priority: upstream.priority,
        weight: upstream.weight,
        maxConcurrency: upstream.max_concurrency ?? null,
        requestsPerMinute: upstream.requests_per_minute ?? null,
      }));
      const first = firstUpstream(upstreams);
      await repository.upsertAlias(trx, {
        alias: alias.alias,
        provider_id: first.providerId,
        upstream_model: first.upstreamModel,
        protocols: alias.protocols,
        published: alias.published,
        ...priceColumns(
          alias.price === null
            ? null
            : {
                input: alias.price.input,
                output: alias.price.output,
                cacheRead: alias.price.cache_read,
                cacheWrite: alias.price.cache_write,
                cacheWrite1h: alias.price.cache_write_1h,
                request: alias.price.request,
              },
        ),
        default_max_output_tokens: alias.default_max_output_tokens,
        max_output_tokens: alias.max_output_tokens,
        package_rate: BigInt(alias.package_rate),
      });
      await repository.replaceAliasUpstreams(trx, alias.alias, alias.upstreams ? rowsOf(upstreams) : []);
      await repository.replaceUpstreamCosts(
        trx,
        alias.alias,
        costRowsOf(
          fileUpstreams(alias).map((upstream) => ({
            providerId: upstream.provider,
            upstreamModel: upstream.upstream_model,
            cost: upstream.cost ? priceInputOf(upstream.cost) : null,
          })),
        ),
      );
    }
    for (const pack of catalog.packages) {
      await repository.upsertPackage(trx, {
        id: pack.id,
        name: pack.name,
        tokens: BigInt(pack.tokens),
        validity_days: pack.validity_days,
        aliases: pack.aliases,
        max_output_tokens: pack.max_output_tokens,
        requests_per_minute: pack.requests_per_minute,
        concurrency: pack.concurrency,
        price_amount: BigInt(pack.price.amount),
        price_currency: pack.price.currency,
        price_exponent: pack.price.exponent,
        published: pack.published,
        counts: pack.counts,
      });
    }
    await writeCreditSettings(trx, catalog.credit);
  });
  await deps.events.publish({ type: 'catalog.changed' });
}

/** The file's credit section, or none: the file manages what a credit is worth. */
async function writeCreditSettings(trx: Transaction<Database>, credit: CreditSection | undefined) {
  if (!credit) {
    await repository.deleteCatalogSettings(trx);
    return;
  }
  const exponent = currencyExponent(credit.currency)!;
  await repository.putCatalogSettings(trx, {
    credit_currency: credit.currency,
    credit_exponent: exponent,
    credit_value: credit.value,
    top_up_min: credit.top_up ? decimalToMinor(credit.top_up.min, exponent) : null,
    top_up_max: credit.top_up ? decimalToMinor(credit.top_up.max, exponent) : null,
  });
}

export interface CreditSettings {
  currency: string;
  exponent: number;
  /** One credit in the currency, an exact decimal. */
  value: string;
  topUp: { min: bigint; max: bigint } | null;
}

/** What a credit is worth and the top-up bounds; null when the catalogue sets no value. */
export async function readCreditSettings(deps: { db: Kysely<Database> }): Promise<CreditSettings | null> {
  const row = await repository.findCatalogSettings(deps.db);
  if (!row) return null;
  return {
    currency: row.credit_currency,
    exponent: row.credit_exponent,
    value: row.credit_value,
    topUp:
      row.top_up_min !== null && row.top_up_max !== null
        ? { min: row.top_up_min, max: row.top_up_max }
        : null,
  };
}

/** The alias row's price columns for a price as written (the parts not given filled in). */
export function priceColumns(price: AliasPriceInput | null) {
  if (price === null) {
    return {
      input_price: null,
      output_price: null,
      cache_read_price: null,
      cache_write_price: null,
      cache_write_1h_price: null,
      request_price: 0n,
    };
  }
  const full = completePrice(price);
  return {
    input_price: BigInt(full.input),
    output_price: BigInt(full.output),
    cache_read_price: BigInt(full.cacheRead),
    cache_write_price: BigInt(full.cacheWrite),
    cache_write_1h_price: BigInt(full.cacheWrite1h),
    request_price: BigInt(full.request),
  };
}

/** An alias row's prices; null when it has no input or output price (only packages pay). */
export function aliasPriceOf(alias: repository.AliasRow): AliasPrice | null {
  if (alias.input_price === null || alias.output_price === null) return null;
  return completePrice({
    input: alias.input_price,
    output: alias.output_price,
    cacheRead: alias.cache_read_price,
    cacheWrite: alias.cache_write_price,
    cacheWrite1h: alias.cache_write_1h_price,
    request: alias.request_price,
  });
}

/** The provider row's credential columns: the first name, and the whole pool when there are several. */
function credentialColumns(names: string[]): {
  credential_ref: string | null;
  credential_refs: string[] | null;
} {
  return { credential_ref: names[0] ?? null, credential_refs: names.length > 1 ? names : null };
}

function toProviderView(provider: repository.ProviderRow): GatewayProvider & { credentialRefs: string[] } {
  return {
    id: provider.id,
    kind: provider.kind,
    baseUrl: provider.base_url,
    credentialRef: provider.credential_ref,
    credentialRefs: provider.credential_refs ?? (provider.credential_ref ? [provider.credential_ref] : []),
  };
}

/**
 * The upstream the reservation answers and model_aliases keeps: the first of the lowest priority.
 * (Only that one is asked of the alias row; the gateway chooses among the rest per call.)
 */
export function firstUpstream(upstreams: GatewayUpstream[]): GatewayUpstream {
  const lowest = Math.min(...upstreams.map((upstream) => upstream.priority));
  const first = upstreams.find((upstream) => upstream.priority === lowest);
  if (!first) throw new Error('an alias has at least one upstream');
  return first;
}

/** A price as the catalogue file writes it. */
function priceInputOf(price: FilePartPrices): AliasPriceInput {
  return {
    input: price.input,
    output: price.output,
    cacheRead: price.cache_read,
    cacheWrite: price.cache_write,
    cacheWrite1h: price.cache_write_1h,
    request: price.request,
  };
}

/** The cost rows of an alias's upstreams that carry a cost price. */
function costRowsOf(
  upstreams: Array<
    { providerId: string; upstreamModel: string } & { cost?: AliasPriceInput | null | undefined }
  >,
) {
  return upstreams.flatMap(({ providerId, upstreamModel, cost }) => {
    if (!cost) return [];
    const full = completePrice(cost);
    return [
      {
        provider_id: providerId,
        upstream_model: upstreamModel,
        input_cost: BigInt(full.input),
        output_cost: BigInt(full.output),
        cache_read_cost: BigInt(full.cacheRead),
        cache_write_cost: BigInt(full.cacheWrite),
        cache_write_1h_cost: BigInt(full.cacheWrite1h),
        request_cost: BigInt(full.request),
      },
    ];
  });
}

/** Each alias's upstream cost prices, by alias then upstream (provider and model). */
async function readCosts(db: Dependencies['db']): Promise<Map<string, AliasPrice>> {
  const costs = new Map<string, AliasPrice>();
  for (const row of await repository.listUpstreamCosts(db)) {
    costs.set(JSON.stringify([row.alias, row.provider_id, row.upstream_model]), {
      input: String(row.input_cost),
      output: String(row.output_cost),
      cacheRead: String(row.cache_read_cost),
      cacheWrite: String(row.cache_write_cost),
      cacheWrite1h: String(row.cache_write_1h_cost),
      request: String(row.request_cost),
    });
  }
  return costs;
}

function rowsOf(upstreams: GatewayUpstream[]) {
  return upstreams.map((upstream) => ({
    provider_id: upstream.providerId,
    upstream_model: upstream.upstreamModel,
    priority: upstream.priority,
    weight: upstream.weight,
    max_concurrency: upstream.maxConcurrency ?? null,
    requests_per_minute: upstream.requestsPerMinute ?? null,
  }));
}

/** Each alias's upstream list; an alias without one is served by its own provider and model alone. */
async function readUpstreams(
  db: Dependencies['db'],
  aliases: repository.AliasRow[],
): Promise<Map<string, GatewayUpstream[]>> {
  const lists = new Map<string, GatewayUpstream[]>();
  for (const row of await repository.listAliasUpstreams(db)) {
    const list = lists.get(row.alias) ?? [];
    list.push({
      providerId: row.provider_id,
      upstreamModel: row.upstream_model,
      priority: row.priority,
      weight: row.weight,
      maxConcurrency: row.max_concurrency,
      requestsPerMinute: row.requests_per_minute,
    });
    lists.set(row.alias, list);
  }
  for (const alias of aliases) {
    if (!lists.has(alias.alias)) {
      lists.set(alias.alias, [
        { providerId: alias.provider_id, upstreamModel: alias.upstream_model, priority: 0, weight: 1 },
      ]);
    }
  }
  return lists;
}

/** What gateways cache: every alias (unpublished ones too, to answer model_not_allowed) and provider. */
export async function readGatewayCatalog(deps: Dependencies): Promise<GatewayCatalog> {
  const [providers, aliases] = await Promise.all([
    repository.listProviders(deps.db),
    repository.listAliases(deps.db),
  ]);
  const upstreams = await readUpstreams(deps.db, aliases);
  return {
    providers: providers.map(toProviderView),
    aliases: aliases.map((alias) => ({
      alias: alias.alias,
      published: alias.published,
      protocols: alias.protocols as Protocol[],
      providerId: alias.provider_id,
      upstreamModel: alias.upstream_model,
      upstreams: upstreams.get(alias.alias) ?? [],
      defaultMaxOutputTokens: alias.default_max_output_tokens,
      maxOutputTokens: alias.max_output_tokens,
      price: aliasPriceOf(alias),
      packageRate: String(alias.package_rate),
    })),
  };
}

export function toPublicModel(alias: repository.AliasRow): PublicModel {
  return {
    alias: alias.alias,
    protocols: alias.protocols as Protocol[],
    price: aliasPriceOf(alias),
    maxOutputTokens: alias.max_output_tokens,
    defaultMaxOutputTokens: alias.default_max_output_tokens,
    packageRate: String(alias.package_rate),
  };
}

export function toPublicPackage(pack: repository.PackageRow): PublicPackage {
  return {
    id: pack.id,
    name: pack.name,
    tokens: String(pack.tokens),
    validityDays: pack.validity_days,
    aliases: pack.aliases,
    ceilings: {
      maxOutputTokens: pack.max_output_tokens,
      requestsPerMinute: pack.requests_per_minute,
      concurrency: pack.concurrency,
    },
    price: {
      amount: String(pack.price_amount),
      currency: pack.price_currency,
      exponent: pack.price_exponent,
    },
    counts: pack.counts,
  };
}

export async function listPublishedModels(deps: Dependencies): Promise<PublicModel[]> {
  return (await repository.listAliases(deps.db, { publishedOnly: true })).map(toPublicModel);
}

/** Every alias name with whether it is published (for checking key scopes). */
export async function listCatalogAliases(
  db: Dependencies['db'],
): Promise<Array<{ alias: string; published: boolean }>> {
  return (await repository.listAliases(db)).map((row) => ({ alias: row.alias, published: row.published }));
}

export async function listPublishedPackages(deps: Dependencies): Promise<PublicPackage[]> {
  return (await repository.listPackages(deps.db, { publishedOnly: true })).map(toPublicPackage);
}

export async function findPackage(deps: Dependencies, id: string): Promise<repository.PackageRow> {
  const pack = await repository.findPackage(deps.db, id);
  if (!pack) throw new AppError('not_found', { message: `No package ${id}.` });
  return pack;
}

/** Admin view: everything, upstream details included. */
export async function readFullCatalog(deps: Dependencies) {
  const [providers, aliases, packages] = await Promise.all([
    repository.listProviders(deps.db),
    repository.listAliases(deps.db),
    repository.listPackages(deps.db),
  ]);
  const [upstreams, costs] = await Promise.all([readUpstreams(deps.db, aliases), readCosts(deps.db)]);
  return {
    providers: providers.map(toProviderView),
    aliases: aliases.map((alias) => ({
      ...toPublicModel(alias),
      published: alias.published,
      providerId: alias.provider_id,
      upstreamModel: alias.upstream_model,
      upstreams: (upstreams.get(alias.alias) ?? []).map((upstream) => ({
        ...upstream,
        cost: costs.get(JSON.stringify([alias.alias, upstream.providerId, upstream.upstreamModel])) ?? null,
      })),
    })),
    packages: packages.map((pack) => ({ ...toPublicPackage(pack), published: pack.published })),
  };
}

export interface AliasChange {
  /** The one-upstream shorthand; or `upstreams`, never both. */
  providerId?: string | undefined;
  upstreamModel?: string | undefined;
  upstreams?: Array<GatewayUpstream & { cost?: AliasPriceInput | null | undefined }> | undefined;
  /** The shorthand upstream's cost price (docs/routing.md, margin). */
  cost?: AliasPriceInput | null | undefined;
  protocols: Protocol[];
  published: boolean;
  price: AliasPriceInput | null;
  defaultMaxOutputTokens: number;
  maxOutputTokens: number;
  /** Units of a weighted package one token costs (R2b); default 1. */
  packageRate?: string | undefined;
}

/** The audit row of an admin's catalogue change, written in the change's transaction. */
function auditCatalog(
  trx: Transaction<Database>,
  actor: Actor,
  targetType: string,
  targetId: string,
  detail: object,
) {
  return recordAudit(trx, actor, {
    action: 'admin.catalog.change',
    targetType,
    targetId,
    detail: { ...detail },
  });
}

/**
 * Creates or re-points an alias, audited as the admin's. Callers keep using the alias; nothing else
 * changes for them.
 */
export async function putAlias(
  deps: Dependencies,
  actor: Actor,
  alias: string,
  change: AliasChange,
): Promise<void> {
  const upstreams = await checkUpstreams(deps, change);
  // Any provider kind serves every protocol: the gateway translates (docs/translation.md).
  if (change.defaultMaxOutputTokens > change.maxOutputTokens) {
    throw AppError.validation({ defaultMaxOutputTokens: ['Must not be above maxOutputTokens.'] });
  }
  const first = firstUpstream(upstreams);
  await deps.db.transaction().execute(async (trx) => {
    await repository.upsertAlias(trx, {
      alias,
      provider_id: first.providerId,
      upstream_model: first.upstreamModel,
      protocols: change.protocols,
      published: change.published,
      ...priceColumns(change.price),
      default_max_output_tokens: change.defaultMaxOutputTokens,
      max_output_tokens: change.maxOutputTokens,
      package_rate: BigInt(change.packageRate ?? '1'),
    });
    await repository.replaceAliasUpstreams(trx, alias, change.upstreams ? rowsOf(upstreams) : []);
    await repository.replaceUpstreamCosts(
      trx,
      alias,
      costRowsOf(change.upstreams ?? upstreams.map((upstream) => ({ ...upstream, cost: change.cost }))),
    );
    await auditCatalog(trx, actor, 'alias', alias, change);
  });
  await deps.events.publish({ type: 'catalog.changed' });
}

/**
 * The alias's upstream list from either form, each provider known and no upstream twice;
 * validation_failed naming the field otherwise.
 */
async function checkUpstreams(deps: Dependencies, change: AliasChange): Promise<GatewayUpstream[]> {
  const shorthand = change.providerId !== undefined || change.upstreamModel !== undefined;
  if (change.upstreams && change.cost) {
    throw AppError.validation({ cost: ['With upstreams, give each upstream its cost.'] });
  }
  if (shorthand && change.upstreams) {
    throw AppError.validation({ upstreams: ['Give either providerId and upstreamModel, or upstreams.'] });
  }
  if (!change.upstreams && (change.providerId === undefined || change.upstreamModel === undefined)) {
    const missing = change.providerId === undefined ? 'providerId' : 'upstreamModel';
    throw AppError.validation({ [missing]: ['Required (or give upstreams instead).'] });
  }
  const upstreams = change.upstreams ?? [
    {
      providerId: change.providerId ?? '',
      upstreamModel: change.upstreamModel ?? '',
      priority: 0,
      weight: 1,
    },
  ];
  const field = (index: number, name: string) => (change.upstreams ? `upstreams.${index}.${name}` : name);
  const known = new Set((await repository.listProviders(deps.db)).map((provider) => provider.id));
  const seen = new Set<string>();
  const problems: Record<string, string[]> = {};
  upstreams.forEach((upstream, index) => {
    if (!known.has(upstream.providerId)) {
      problems[field(index, 'providerId')] = [`No provider ${upstream.providerId}.`];
    }
    const id = JSON.stringify([upstream.providerId, upstream.upstreamModel]);
    if (seen.has(id)) problems[field(index, 'upstreamModel')] = ['This upstream is listed twice.'];
    seen.add(id);
  });
  if (Object.keys(problems).length > 0) throw AppError.validation(problems);
  return upstreams;
}

export async function putProvider(
  deps: Dependencies,
  actor: Actor,
  id: string,
  change: { kind: ProviderKind; baseUrl: string; credentialRef: string | null; credentialRefs?: string[] },
): Promise<void> {
  const problems: Record<string, string[]> = {};
  const names = change.credentialRefs ?? (change.credentialRef ? [change.credentialRef] : []);
  const field = change.credentialRefs ? 'credentialRefs' : 'credentialRef';
  names.forEach((name, index) => {
    const problem = providerCredentialProblem(name, deps.config.providerSecretPrefix);
    if (problem) problems[change.credentialRefs ? `${field}.${index}` : field] = [problem];
  });
  if (change.credentialRefs && change.credentialRef !== null && change.credentialRef !== names[0]) {
    problems.credentialRef = ['Give credentialRefs alone, or credentialRef as its first name.'];
  }
  if (new Set(names).size !== names.length) problems.credentialRefs = ['A credential is named twice.'];
  if (Object.keys(problems).length > 0) throw AppError.validation(problems);
  await deps.db.transaction().execute(async (trx) => {
    await repository.upsertProvider(trx, {
      id,
      kind: change.kind,
      base_url: change.baseUrl,
      ...credentialColumns(names),
    });
    // Credential names only: never a secret.
    await auditCatalog(trx, actor, 'provider', id, {
      kind: change.kind,
      baseUrl: change.baseUrl,
      credentials: names,
    });
  });
  await deps.events.publish({ type: 'catalog.changed' });
}

export async function putPackage(
  deps: Dependencies,
  actor: Actor,
  id: string,
  values: repository.PackageValues,
): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    await repository.upsertPackage(trx, { ...values, id });
    await auditCatalog(trx, actor, 'package', id, values);
  });
}

/** The credit value as the public catalogue shows it (GET /catalog/credit). */
export async function readCreditValue(deps: { db: Kysely<Database> }) {
  const settings = await readCreditSettings(deps);
  if (!settings) return { value: null, topUp: null };
  const money = (amount: bigint) => ({
    amount: String(amount),
    currency: settings.currency,
    exponent: settings.exponent,
  });
  return {
    value: { currency: settings.currency, exponent: settings.exponent, perCredit: settings.value },
    topUp: settings.topUp ? { min: money(settings.topUp.min), max: money(settings.topUp.max) } : null,
  };
}
