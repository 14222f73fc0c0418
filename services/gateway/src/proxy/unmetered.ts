import { randomUUID } from 'node:crypto';
import { AppError } from '@tollgate/errors';
import type { ResolvedKey } from '@tollgate/schemas';
import type { GatewayDependencies } from '../deps.ts';
import {
  assertSupportedParameters,
  estimateInputTokens,
  parseJsonObject,
  readBodyWithLimit,
} from '../request/index.ts';
import { authenticate } from './authenticate.ts';
import type { RequestLog } from './request-log.ts';
import { selectAlias, selectPlan } from './select-alias.ts';

/** Calls that cost no quota still count against the key's request ceiling (SPEC.md, Gateway rule 1). */
async function countRequest(deps: GatewayDependencies, key: ResolvedKey, alias?: string): Promise<void> {
  const plan = alias ? selectPlan(key, alias) : null;
  const decision = await deps.limiter.acquire({
    keyId: key.keyId,
    keyRequestsPerMinute: key.limits.requestsPerMinute,
    keyConcurrency: null,
    plan: plan && {
      id: `${key.accountId}:${plan.packageId}`,
      requestsPerMinute: plan.requestsPerMinute,
      concurrency: null,
    },
    leaseId: randomUUID(),
  });
  if (!decision.allowed) throw new AppError(decision.code, { retryAfterSeconds: decision.retryAfterSeconds });
}

/** POST /v1/messages/count_tokens: a local estimate; no reservation, no upstream call. */
export async function countTokens(
  deps: GatewayDependencies,
  request: Request,
  log: RequestLog,
): Promise<Response> {
  const { key } = await authenticate(deps, request, { fresh: true });
  log.keyId = key.keyId;
  const limit = Math.min(deps.config.maxRequestBytes, key.limits.maxRequestBytes);
  const body = parseJsonObject(
    await readBodyWithLimit(request.body, limit, request.headers.get('content-length')),
  );
  await deps.catalog.ready();
  const alias = selectAlias(deps.catalog, key, body.model, 'count_tokens');
  log.alias = alias.alias;
  assertSupportedParameters('count_tokens', body);
  await countRequest(deps, key, alias.alias);
  return Response.json({ input_tokens: estimateInputTokens('count_tokens', body) });
}

function aliasesInScope(deps: GatewayDependencies, key: ResolvedKey) {
  return [...deps.catalog.aliases()]
    .filter((alias) => alias.published && (key.scope === null || key.scope.includes(alias.alias)))
    .sort((a, b) => a.alias.localeCompare(b.alias));
}

/**
 * GET /v1/models: the aliases this key may call, with the protocols of each. Shaped so both the
 * OpenAI and the Anthropic clients can read it; never shows an upstream model or provider.
 */
export async function listModels(
  deps: GatewayDependencies,
  request: Request,
  log: RequestLog,
): Promise<Response> {
  const { key } = await authenticate(deps, request, { fresh: true });
  log.keyId = key.keyId;
  await countRequest(deps, key);
  await deps.catalog.ready();
  const data = aliasesInScope(deps, key).map((alias) => ({
    id: alias.alias,
    object: 'model',
    type: 'model',
    display_name: alias.alias,
    created: 0,
    created_at: '1970-01-01T00:00:00Z',
    owned_by: 'tollgate',
    protocols: alias.protocols,
    max_output_tokens: alias.maxOutputTokens,
  }));
  return Response.json({
    object: 'list',
    data,
    has_more: false,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
  });
}

/** GET /v1/key/status: state, expiry, allowed aliases, ceilings and balances. Reserves nothing. */
export async function keyStatus(
  deps: GatewayDependencies,
  request: Request,
  log: RequestLog,
): Promise<Response> {
  const { digest, key } = await authenticate(deps, request, { fresh: true });
  log.keyId = key.keyId;
  await countRequest(deps, key);
  await deps.catalog.ready();
  const status = await deps.billing.keyStatus(digest);
  return Response.json({
    ...status,
    allowedAliases: aliasesInScope(deps, key).map((alias) => alias.alias),
  });
}
