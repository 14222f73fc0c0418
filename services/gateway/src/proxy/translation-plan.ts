import type { GatewayAlias, MeteredSurface } from '@tollgate/schemas';
import type { GatewayDependencies } from '../deps.ts';
import { planTranslation, type Translation } from '../translation/translate.ts';
import { getAdapter } from '../upstream/index.ts';

/**
 * Whether the alias's provider speaks the called surface itself: then its body is forwarded as
 * sent (the native path). A provider missing from the catalogue counts as native: the forward
 * step reports it, as before.
 */
export function servesNatively(
  deps: GatewayDependencies,
  surface: MeteredSurface,
  alias: GatewayAlias,
): boolean {
  const provider = deps.catalog.provider(alias.providerId);
  return !provider || getAdapter(provider.kind, alias.upstreamModel).surfaces.includes(surface);
}

/**
 * Whether a call needs translating, decided before the reservation: null when the alias's
 * provider speaks the called surface (the native path, unchanged), else the decoded request,
 * already checked against what the upstream can express (refusals cost nothing).
 */
export function translationFor(
  deps: GatewayDependencies,
  surface: MeteredSurface,
  alias: GatewayAlias,
  body: Record<string, unknown>,
  maxOutputTokens: number,
): Translation | null {
  const provider = deps.catalog.provider(alias.providerId);
  // A provider missing from the catalogue is reported by the forward step, as before.
  if (!provider) return null;
  const adapter = getAdapter(provider.kind, alias.upstreamModel);
  if (adapter.surfaces.includes(surface)) return null;
  return planTranslation(surface, adapter.wireProtocol, body, maxOutputTokens, {
    providerId: provider.id,
    upstreamModel: alias.upstreamModel,
  });
}
