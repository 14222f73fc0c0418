import { SERVICE_TOKEN_AUDIENCE, SERVICE_TOKEN_ISSUER } from '@tollgate/schemas';
import { SignJWT } from 'jose';

const LIFETIME_SECONDS = 300;
const REFRESH_AFTER_MS = 60_000;

/**
 * The short-lived HS256 token the control plane's internal API requires. Signed once a minute,
 * not per request: the control plane caches what it verified until the token expires.
 */
export function createServiceTokenSource(secret: string, now: () => number = Date.now) {
  const key = new TextEncoder().encode(secret);
  let current: { token: string; signedAt: number } | null = null;
  let pending: Promise<string> | null = null;

  async function sign(): Promise<string> {
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer(SERVICE_TOKEN_ISSUER)
      .setAudience(SERVICE_TOKEN_AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(`${LIFETIME_SECONDS}s`)
      .sign(key);
    current = { token, signedAt: now() };
    return token;
  }

  return {
    token(): Promise<string> | string {
      if (current && now() - current.signedAt < REFRESH_AFTER_MS) return current.token;
      pending ??= sign().finally(() => {
        pending = null;
      });
      return pending;
    },
  };
}
