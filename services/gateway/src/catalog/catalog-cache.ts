import type { GatewayAlias, GatewayCatalog, GatewayProvider } from '@tollgate/schemas';
import type { Logger } from '@tollgate/service-kit';

/**
 * The catalogue as the gateway validates against it (aliases, protocols, output ceilings,
 * providers). Loaded at start, reloaded on a catalog.changed event and every `refreshMs`.
 * The reservation answers where an alias points at that instant, so a stale copy never routes a
 * call to an old upstream.
 */
export function createCatalogCache(
  load: () => Promise<GatewayCatalog>,
  options: { refreshMs: number; logger: Logger },
) {
  let aliases = new Map<string, GatewayAlias>();
  let providers = new Map<string, GatewayProvider>();
  let loaded = false;
  let loading: Promise<void> | null = null;
  let timer: NodeJS.Timeout | null = null;

  function reload(): Promise<void> {
    loading ??= load()
      .then((catalog) => {
        aliases = new Map(catalog.aliases.map((alias) => [alias.alias, alias]));
        providers = new Map(catalog.providers.map((provider) => [provider.id, provider]));
        loaded = true;
      })
      .catch((error: unknown) => {
        options.logger.warn({ err: error }, 'could not load the catalogue; keeping the last copy');
        if (!loaded) throw error;
      })
      .finally(() => {
        loading = null;
      });
    return loading;
  }

  return {
    /** Resolves once a catalogue is loaded (retrying a first load that failed). */
    async ready(): Promise<void> {
      if (!loaded) await reload();
    },
    alias: (name: string) => aliases.get(name),
    provider: (id: string) => providers.get(id),
    aliases: () => aliases.values(),
    reload,
    start(): void {
      timer = setInterval(() => {
        reload().catch(() => {});
      }, options.refreshMs);
      timer.unref();
    },
    stop(): void {
      if (timer) clearInterval(timer);
    },
  };
}

export type CatalogCache = ReturnType<typeof createCatalogCache>;
