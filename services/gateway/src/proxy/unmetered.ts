import { AppError } from '@tollgate/errors';
import type { AliasPrice, ResolvedKey } from '@tollgate/schemas';
import type { GatewayDependencies } from '../deps.ts';
import type { InboundRequest } from '../request/inbound.ts';
import { authenticate } from './authenticate.ts';
import { budgetHeaders, takeLimits } from './limits.ts';
import type { RequestLog } from './request-log.ts';
import { selectAlias } from './select-alias.ts';

/**
 * Runs an unmetered call inside the key's ceilings (docs/behaviour.md, Limits): the call is counted
 * against the request ceiling and holds a concurrency slot until its answer is built, before any
 * of its work is done. These calls draw on no package, so only the key's ceilings apply.
 */
async function withinKeyLimits(
  deps: GatewayDependencies,
  key: ResolvedKey,
  work: () => Promise<Response>,
): Promise<Response> {
  const { lease, budget } = await takeLimits(deps, key, null, { holdsSlot: true });
  try {
    const response = await work();
    for (const [name, value] of Object.entries(budgetHeaders(budget))) response.headers.set(name, value);
    return response;
  } finally {
    await lease?.release();
  }
}

/**
 * POST /v1/messages/count_tokens: a local estimate; no reservation, no upstream call. The body is
 * read under its own, smaller limit and parsed and counted in a worker thread.
 */
export async function countTokens(
  deps: GatewayDependencies,
  request: InboundRequest,
  log: RequestLog,
): Promise<Response> {
  const { key } = await authenticate(deps, request, { fresh: true });
  log.keyId = key.keyId;
  return withinKeyLimits(deps, key, async () => {
    const limit = Math.min(
      deps.config.countTokens.maxRequestBytes,
      deps.config.maxRequestBytes,
      key.limits.maxRequestBytes,
    );
    const counted = await deps.tokens.count(await request.readBody(limit), request.signal);
    await deps.catalog.ready();
    const alias = selectAlias(deps.catalog, key, counted.model, 'count_tokens');
    log.alias = alias.alias;
    if (counted.unsupported) throw new AppError('unsupported_parameter', { message: counted.unsupported });
    return Response.json({ input_tokens: counted.inputTokens });
  });
}

function aliasesInScope(deps: GatewayDependencies, key: ResolvedKey) {
  return [...deps.catalog.aliases()]
    .filter((alias) => alias.published && (key.scope === null || key.scope.includes(alias.alias)))
    .sort((a, b) => a.alias.localeCompare(b.alias));
}

/**
 * GET /v1/models: the aliases this key may call, with every protocol each supports. A request
 * carrying `anthropic-version` (the Anthropic SDK, Claude Code's model discovery) gets Anthropic's
 * model-list shape, any other OpenAI's. Never shows an upstream model or provider.
 */
export async function listModels(
  deps: GatewayDependencies,
  request: InboundRequest,
  log: RequestLog,
): Promise<Response> {
  const { key } = await authenticate(deps, request, { fresh: true });
  log.keyId = key.keyId;
  const anthropicShape = Boolean(request.headers.get('anthropic-version'));
  return withinKeyLimits(deps, key, () => modelsOf(deps, key, anthropicShape));
}

async function modelsOf(
  deps: GatewayDependencies,
  key: ResolvedKey,
  anthropicShape: boolean,
): Promise<Response> {
  await deps.catalog.ready();
  const aliases = aliasesInScope(deps, key);
  if (anthropicShape) {
    const data = aliases.map((alias) => ({
      type: 'model',
      id: alias.alias,
      display_name: alias.alias,
      created_at: '1970-01-01T00:00:00Z',
      protocols: alias.protocols,
      max_output_tokens: alias.maxOutputTokens,
      pricing: pricingOf(alias.price),
      package_rate: alias.packageRate ?? '1',
    }));
    return Response.json({
      data,
      has_more: false,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
    });
  }
  const data = aliases.map((alias) => ({
    id: alias.alias,
    object: 'model',
    created: 0,
    owned_by: 'tollgate',
    protocols: alias.protocols,
    max_output_tokens: alias.maxOutputTokens,
    pricing: pricingOf(alias.price),
    package_rate: alias.packageRate ?? '1',
  }));
  return Response.json({ object: 'list', data });
}

/**
 * An alias's prices as model lists show them (docs/api/gateway.md): credits, integer strings, per
 * token of each usage part and per call, so a caller can work out what a call will cost; null when
 * only token packages pay for the alias.
 */
function pricingOf(price: AliasPrice | null | undefined) {
  if (!price) return null;
  return {
    unit: 'credits',
    input: price.input,
    output: price.output,
    cache_read: price.cacheRead,
    cache_write: price.cacheWrite,
    cache_write_1h: price.cacheWrite1h,
    request: price.request,
  };
}

/** GET /v1/key/status: state, expiry, allowed aliases, ceilings and balances. Reserves nothing. */
export async function keyStatus(
  deps: GatewayDependencies,
  request: InboundRequest,
  log: RequestLog,
): Promise<Response> {
  const { digest, key } = await authenticate(deps, request, { fresh: true });
  log.keyId = key.keyId;
  return withinKeyLimits(deps, key, async () => {
    await deps.catalog.ready();
    const status = await deps.billing.keyStatus(digest);
    return Response.json({
      ...status,
      allowedAliases: aliasesInScope(deps, key).map((alias) => alias.alias),
    });
  });
}

const REQUEST_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * GET /v1/key/usage/{request_id}: the receipt of one call this key made (docs/receipts.md), named
 * by the x-request-id its answer carried. Another key's call and an unknown id are both not_found.
 */
export async function keyUsage(
  deps: GatewayDependencies,
  request: InboundRequest,
  log: RequestLog,
): Promise<Response> {
  const { digest, key } = await authenticate(deps, request, { fresh: true });
  log.keyId = key.keyId;
  return withinKeyLimits(deps, key, async () => {
    const requestId = decodeURIComponent(
      new URL(request.url, 'http://gateway').pathname.split('/').at(-1) ?? '',
    );
    if (!REQUEST_ID.test(requestId)) throw noSuchCall();
    // A call told its cost at once may still have its settlement queued here: sent first, so
    // the receipt reads it settled.
    await deps.billing.settledFor(key.accountId, deps.config.billing.timeoutMs);
    try {
      return Response.json(await deps.billing.receipt(digest, requestId));
    } catch (error) {
      throw error instanceof AppError && error.code === 'not_found' ? noSuchCall() : error;
    }
  });
}

function noSuchCall(): AppError {
  return new AppError('not_found', { message: 'This key made no call with that request id.' });
}
