import { AppError } from '@tollgate/errors';
import type { MiddlewareHandler } from 'hono';

/** An `sk-` credential anywhere in a header value (Bearer, x-api-key, a cookie, ...). */
const INFERENCE_KEY = /(?:^|[^A-Za-z0-9_-])sk-[A-Za-z0-9_-]{8,}/;

/**
 * The control plane never accepts an inference key: a request that carries one in any header is
 * refused as unauthenticated, whatever else it carries.
 */
export function refuseInferenceKeys(): MiddlewareHandler {
  return async (c, next) => {
    for (const value of c.req.raw.headers.values()) {
      if (INFERENCE_KEY.test(value))
        throw new AppError('unauthenticated', {
          message: 'Inference API keys cannot be used here. Sign in to manage your account.',
        });
    }
    await next();
  };
}
