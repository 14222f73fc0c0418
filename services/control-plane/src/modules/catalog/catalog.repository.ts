import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type {
  AliasUpstreamsTable,
  CatalogSettingsTable,
  ModelAliasesTable,
  PackagesTable,
  ProvidersTable,
  UpstreamCostsTable,
} from './catalog.table.ts';

type Db = Kysely<Database> | Transaction<Database>;

export type ProviderRow = Selectable<ProvidersTable>;
export type AliasRow = Selectable<ModelAliasesTable>;
export type PackageRow = Selectable<PackagesTable>;
export type AliasUpstreamRow = Selectable<AliasUpstreamsTable>;
export type UpstreamCostRow = Selectable<UpstreamCostsTable>;

export type ProviderValues = Omit<ProviderRow, 'updated_at'>;
export type AliasValues = Omit<AliasRow, 'updated_at'>;
export type PackageValues = Omit<PackageRow, 'updated_at'>;

export async function upsertProvider(db: Db, values: ProviderValues): Promise<void> {
  await db
    .insertInto('providers')
    .values(values)
    .onConflict((conflict) =>
      conflict.column('id').doUpdateSet({
        kind: values.kind,
        base_url: values.base_url,
        credential_ref: values.credential_ref,
        credential_refs: values.credential_refs,
        updated_at: new Date(),
      }),
    )
    .execute();
}

export async function upsertAlias(db: Db, values: AliasValues): Promise<void> {
  const { alias: _alias, ...changes } = values;
  await db
    .insertInto('model_aliases')
    .values(values)
    .onConflict((conflict) => conflict.column('alias').doUpdateSet({ ...changes, updated_at: new Date() }))
    .execute();
}

export async function upsertPackage(db: Db, values: PackageValues): Promise<void> {
  const { id: _id, ...changes } = values;
  await db
    .insertInto('packages')
    .values(values)
    .onConflict((conflict) => conflict.column('id').doUpdateSet({ ...changes, updated_at: new Date() }))
    .execute();
}

export function listProviders(db: Db): Promise<ProviderRow[]> {
  return db.selectFrom('providers').selectAll().orderBy('id').execute();
}

export function listAliases(db: Db, options: { publishedOnly?: boolean } = {}): Promise<AliasRow[]> {
  return db
    .selectFrom('model_aliases')
    .selectAll()
    .$if(options.publishedOnly === true, (query) => query.where('published', '=', true))
    .orderBy('alias')
    .execute();
}

export function findProvider(db: Db, id: string): Promise<ProviderRow | undefined> {
  return db.selectFrom('providers').selectAll().where('id', '=', id).executeTakeFirst();
}

export function listPackages(db: Db, options: { publishedOnly?: boolean } = {}): Promise<PackageRow[]> {
  return db
    .selectFrom('packages')
    .selectAll()
    .$if(options.publishedOnly === true, (query) => query.where('published', '=', true))
    .orderBy('id')
    .execute();
}

export function findPackage(db: Db, id: string): Promise<PackageRow | undefined> {
  return db.selectFrom('packages').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * Replaces an alias's upstream list. An empty list leaves the alias with its own provider and
 * upstream model only (the shorthand).
 */
export async function replaceAliasUpstreams(
  db: Db,
  alias: string,
  upstreams: Array<Omit<AliasUpstreamRow, 'alias' | 'position'>>,
): Promise<void> {
  await db.deleteFrom('alias_upstreams').where('alias', '=', alias).execute();
  if (upstreams.length === 0) return;
  await db
    .insertInto('alias_upstreams')
    .values(upstreams.map((upstream, position) => ({ ...upstream, alias, position })))
    .execute();
}

/** Every alias's upstream list, in list order. */
export function listAliasUpstreams(db: Db): Promise<AliasUpstreamRow[]> {
  return db.selectFrom('alias_upstreams').selectAll().orderBy('alias').orderBy('position').execute();
}

/** Replaces the cost prices of an alias's upstreams (none: no cost price known). */
export async function replaceUpstreamCosts(
  db: Db,
  alias: string,
  costs: Array<Omit<UpstreamCostRow, 'alias'>>,
): Promise<void> {
  await db.deleteFrom('upstream_costs').where('alias', '=', alias).execute();
  if (costs.length === 0) return;
  await db
    .insertInto('upstream_costs')
    .values(costs.map((cost) => ({ ...cost, alias })))
    .execute();
}

export function listUpstreamCosts(db: Db): Promise<UpstreamCostRow[]> {
  return db.selectFrom('upstream_costs').selectAll().execute();
}

export type CatalogSettingsValues = Omit<Selectable<CatalogSettingsTable>, 'id' | 'updated_at'>;

export function findCatalogSettings(db: Db) {
  return db.selectFrom('catalog_settings').selectAll().executeTakeFirst();
}

export async function putCatalogSettings(db: Db, values: CatalogSettingsValues): Promise<void> {
  const row = { ...values, updated_at: new Date() };
  await db
    .insertInto('catalog_settings')
    .values({ id: true, ...row })
    .onConflict((conflict) => conflict.column('id').doUpdateSet(row))
    .execute();
}

export async function deleteCatalogSettings(db: Db): Promise<void> {
  await db.deleteFrom('catalog_settings').execute();
}
