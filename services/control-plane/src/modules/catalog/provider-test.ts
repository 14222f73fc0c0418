import { AppError } from '@tollgate/errors';
import { SERVICE_TOKEN_AUDIENCE, SERVICE_TOKEN_ISSUER } from '@tollgate/schemas';
import { SignJWT } from 'jose';
import type { Dependencies } from '../../deps.ts';
import { findProvider } from './catalog.repository.ts';

export interface ProviderTestResult {
  ok: boolean;
  latencyMs: number;
  upstreamStatus: number | null;
  answer: string;
  credential: string | null;
}

/** The whole wait for a gateway's test call (it gives the provider 20 s). */
const GATEWAY_WAIT_MS = 25_000;

/**
 * The admin's "test connection": one real call to a provider's model, made by a gateway (only
 * gateways hold provider credentials) at GATEWAY_INTERNAL_URL, asked with the service token.
 * Nothing is metered: the call is the operator's own.
 */
export async function testProviderConnection(
  deps: Pick<Dependencies, 'config' | 'db' | 'logger'>,
  providerId: string,
  upstreamModel: string,
): Promise<ProviderTestResult> {
  if (!(await findProvider(deps.db, providerId))) {
    throw new AppError('not_found', { message: `No provider ${providerId}.` });
  }
  const token = await new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(SERVICE_TOKEN_ISSUER)
    .setAudience(SERVICE_TOKEN_AUDIENCE)
    .setIssuedAt()
    .setExpirationTime('60s')
    .sign(new TextEncoder().encode(deps.config.internalTokenSecret));
  try {
    const response = await fetch(`${deps.config.status.gatewayInternalUrl}/internal/v1/providers/test`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ providerId, upstreamModel }),
      signal: AbortSignal.timeout(GATEWAY_WAIT_MS),
    });
    const body = (await response.json().catch(() => null)) as { data?: ProviderTestResult } | null;
    // 404: the gateway has not loaded the provider (it reloads its catalogue first, so rarely).
    if (response.ok && body?.data) return body.data;
    deps.logger.warn({ status: response.status, providerId }, 'gateway refused a provider test call');
  } catch (error) {
    deps.logger.warn(
      { providerId, cause: error instanceof Error ? error.message : String(error) },
      'no gateway answered a provider test call',
    );
  }
  return {
    ok: false,
    latencyMs: 0,
    upstreamStatus: null,
    answer:
      'No gateway made the call: check that a gateway runs at GATEWAY_INTERNAL_URL with the same INTERNAL_TOKEN_SECRET.',
    credential: null,
  };
}
