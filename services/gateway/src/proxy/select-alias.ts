import { AppError } from '@tollgate/errors';
import type { GatewayAlias, PlanCeilings, Protocol, ResolvedKey } from '@tollgate/schemas';
import type { CatalogCache } from '../catalog/catalog-cache.ts';

/**
 * The alias a request names, checked in the order of docs/behaviour.md (gateway rules 7-8):
 * missing or unknown -> invalid_model; unpublished or outside the key's scope ->
 * model_not_allowed; protocol not supported -> model_unavailable (a configuration error: no
 * upstream call).
 */
export function selectAlias(
  catalog: CatalogCache,
  key: ResolvedKey,
  model: unknown,
  protocol: Protocol,
): GatewayAlias {
  if (typeof model !== 'string' || model.length === 0) {
    throw new AppError('invalid_model', {
      message: 'The request has no model. Name one of the models of GET /v1/models.',
    });
  }
  const alias = catalog.alias(model);
  if (!alias) throw new AppError('invalid_model', { message: `Unknown model: ${model.slice(0, 128)}` });
  // Same code either way (the spec's rule 8); the message names the true cause.
  if (!alias.published) {
    throw new AppError('model_not_allowed', {
      message: `${alias.alias} is not published: no key may call it until the operator publishes it.`,
    });
  }
  if (key.scope !== null && !key.scope.includes(alias.alias)) {
    throw new AppError('model_not_allowed', {
      message: `This key may not call ${alias.alias}: its models are limited to ${key.scope.join(', ')}.`,
    });
  }
  if (!alias.protocols.includes(protocol)) {
    throw new AppError('model_unavailable', { message: `${alias.alias} is not available on this endpoint.` });
  }
  return alias;
}

/** The plan a call on this alias draws from first (soonest-expiring usable entitlement covering it). */
export function selectPlan(key: ResolvedKey, alias: string, now = Date.now()): PlanCeilings | null {
  return (
    key.plans.find(
      (plan) =>
        (plan.aliases === null || plan.aliases.includes(alias)) &&
        (plan.expiresAt === null || Date.parse(plan.expiresAt) > now),
    ) ?? null
  );
}
