import { AppError } from '@tollgate/errors';
import { SERVICE_TOKEN_AUDIENCE, SERVICE_TOKEN_ISSUER } from '@tollgate/schemas';
import type { MiddlewareHandler } from 'hono';
import { jwtVerify } from 'jose';
import type { AppEnv } from './env.ts';

const MAX_CACHED_TOKENS = 64;

/**
 * Requires a short-lived HS256 service token from the gateway. A verified token is remembered
 * until it expires, so the hot path does not re-verify the same signature on every call.
 */
export function requireServiceToken(secret: string): MiddlewareHandler<AppEnv> {
  const key = new TextEncoder().encode(secret);
  const verified = new Map<string, number>();

  return async (c, next) => {
    const header = c.req.header('authorization') ?? '';
    const token = header.startsWith('Bearer ') ? header.slice(7) : '';
    if (!token) throw new AppError('unauthenticated');
    const expiresAt = verified.get(token);
    if (expiresAt === undefined || expiresAt <= Date.now()) {
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
      } catch {
        throw new AppError('unauthenticated');
      }
    }
    await next();
  };
}
