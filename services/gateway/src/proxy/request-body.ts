import type { ResolvedKey } from '@tollgate/schemas';
import type { GatewayDependencies } from '../deps.ts';
import type { InboundRequest } from '../request/inbound.ts';
import { parseJsonObject } from '../request/index.ts';

/**
 * The request's JSON object, read under the lower of the service limit and the key's
 * max_request_bytes (request_too_large while reading), with its raw text for byte-exact edits.
 */
export async function readRequestJson(
  deps: GatewayDependencies,
  key: ResolvedKey,
  request: InboundRequest,
): Promise<{ text: string; body: Record<string, unknown> }> {
  const limit = Math.min(deps.config.maxRequestBytes, key.limits.maxRequestBytes);
  const text = (await request.readBody(limit)).toString('utf8');
  return { text, body: parseJsonObject(text, deps.config.maxJsonDepth) };
}
