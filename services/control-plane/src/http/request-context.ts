import { randomUUID } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import type { Dependencies } from '../deps.ts';
import type { AppEnv } from './env.ts';

/** Puts deps, a request id and a child logger on the context; logs one line per request. */
export function requestContext(deps: Dependencies): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const incoming = c.req.header('x-request-id');
    const requestId = incoming && /^[\w-]{1,64}$/.test(incoming) ? incoming : randomUUID();
    const logger = deps.logger.child({ requestId });
    c.set('deps', deps);
    c.set('requestId', requestId);
    c.set('logger', logger);
    const started = performance.now();
    await next();
    c.header('x-request-id', requestId);
    logger.info(
      {
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        ms: Math.round(performance.now() - started),
      },
      'request',
    );
  };
}
