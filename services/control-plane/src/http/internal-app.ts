import { Hono } from 'hono';
import type { Dependencies } from '../deps.ts';
import { billingInternalRoutes } from '../modules/billing/billing.internal-routes.ts';
import type { AppEnv } from './env.ts';
import { handleError, handleNotFound } from './errors.ts';
import { requestContext } from './request-context.ts';
import { requireServiceToken } from './service-token.ts';

/** The internal billing API: its own port, gateway only, service token required on every route. */
export function createInternalApp(deps: Dependencies) {
  const app = new Hono<AppEnv>();
  app.use('*', requestContext(deps, { logLevel: 'debug' }));
  app.onError(handleError);
  app.notFound(handleNotFound);
  app.get('/internal/health', (c) => c.json({ data: { status: 'ok' } }));
  app.use('/internal/v1/*', requireServiceToken(deps.config.internalTokenSecret));
  app.route('/internal/v1', billingInternalRoutes());
  return app;
}
