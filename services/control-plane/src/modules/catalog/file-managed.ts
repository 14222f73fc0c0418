import { AppError } from '@tollgate/errors';
import type { Dependencies } from '../../deps.ts';
import { loadCatalogFile } from './catalog-file.ts';

/** The entries the catalogue file holds: the control plane writes them over at every start. */
export interface FileManaged {
  file: string | null;
  providers: string[];
  aliases: string[];
  packages: string[];
}

/**
 * One rule for the catalogue: an entry in CATALOG_FILE is managed by the file (edited there, synced
 * at start or by `tollgate-admin sync-catalog`); an entry only in the database is the admins'.
 * Read from the file as it is now, so the answer matches what the next start would do.
 */
export async function readFileManaged(deps: Pick<Dependencies, 'config' | 'logger'>): Promise<FileManaged> {
  const { catalogFile, env, providerSecretPrefix } = deps.config;
  if (!catalogFile) return { file: null, providers: [], aliases: [], packages: [] };
  let catalog: Awaited<ReturnType<typeof loadCatalogFile>>;
  try {
    catalog = await loadCatalogFile(catalogFile, env, providerSecretPrefix);
  } catch (error) {
    // Moved or broken since the start (which read it): the admin screens stay usable, and the
    // next start, which reads it too, reports the problem.
    deps.logger.warn(
      { file: catalogFile, reason: error instanceof Error ? error.message : String(error) },
      'catalogue file unreadable; no entry is marked as managed by it',
    );
    return { file: catalogFile, providers: [], aliases: [], packages: [] };
  }
  return {
    file: catalogFile,
    providers: catalog.providers.map((provider) => provider.id),
    aliases: catalog.aliases.map((alias) => alias.alias),
    packages: catalog.packages.map((pack) => pack.id),
  };
}

const KINDS = { providers: 'provider', aliases: 'alias', packages: 'package' } as const;

/**
 * Refuses an admin edit of an entry the file manages: it would be silently undone at the next
 * start. The message says where to change it instead.
 */
export async function refuseFileManaged(
  deps: Pick<Dependencies, 'config' | 'logger'>,
  kind: keyof typeof KINDS,
  id: string,
): Promise<void> {
  const managed = await readFileManaged(deps);
  if (!managed[kind].includes(id)) return;
  throw new AppError('forbidden', {
    message:
      `The ${KINDS[kind]} ${id} is managed by the catalogue file (CATALOG_FILE): change it there and ` +
      'run tollgate-admin sync-catalog (or restart); an edit here would be undone at the next start.',
  });
}
