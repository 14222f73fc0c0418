import { SERVICE_TOKEN_AUDIENCE, SERVICE_TOKEN_ISSUER } from '@tollgate/schemas';
import { jwtVerify } from 'jose';

const MAX_CACHED_TOKENS = 64;

/**
 * Checks the short-lived HS256 service token of the gateway (`Authorization: Bearer <token>`).
 * A verified token is remembered until it expires, so the hot path does not re-verify the same
 * signature on every call.
 */
export function createServiceTokenVerifier(
  secret: string,
): (authorization: string | undefined) => Promise<boolean> {
  const key = new TextEncoder().encode(secret);
  const verified = new Map<string, number>();

  return async (authorization) => {
    const token = authorization?.startsWith('Bearer ') ? authorization.slice(7) : '';
    if (!token) return false;
    const expiresAt = verified.get(token);
    if (expiresAt !== undefined && expiresAt > Date.now()) return true;
    verified.delete(token);
    try {
      const { payload } = await jwtVerify(token, key, {
        issuer: SERVICE_TOKEN_ISSUER,
        audience: SERVICE_TOKEN_AUDIENCE,
        algorithms: ['HS256'],
        maxTokenAge: '10m',
      });
      if (verified.size >= MAX_CACHED_TOKENS) verified.clear();
      verified.set(token, (payload.exp ?? 0) * 1000);
      return true;
    } catch {
      return false;
    }
  };
}
