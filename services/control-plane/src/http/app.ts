import { OpenAPIHono } from '@hono/zod-openapi';
import type { Dependencies } from '../deps.ts';
import { healthRoutes } from '../modules/health/health.routes.ts';
import type { AppEnv } from './env.ts';
import { handleError, handleNotFound, validationHook } from './errors.ts';
import { requestContext } from './request-context.ts';

/** The public API under /api/v1 (dashboard, admin, reseller), with its OpenAPI document. */
export function createPublicApp(deps: Dependencies) {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  app.use('*', requestContext(deps));
  app.onError(handleError);
  app.notFound(handleNotFound);

  const api = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  api.route('/', healthRoutes());

  app.route('/api/v1', api);
  app.doc31('/api/v1/openapi.json', {
    openapi: '3.1.0',
    info: { title: 'Tollgate control plane', version: '1.0.0' },
  });
  return app;
}
