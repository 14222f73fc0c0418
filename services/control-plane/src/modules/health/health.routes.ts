import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { AppEnv } from '../../http/env.ts';
import { validationHook } from '../../http/errors.ts';
import { dataOf, jsonContent } from '../../http/openapi.ts';

const Health = z.object({ status: z.literal('ok') }).openapi('Health');

const healthRoute = createRoute({
  method: 'get',
  path: '/health',
  tags: ['public'],
  summary: 'Control-plane liveness',
  responses: { 200: jsonContent(dataOf(Health), 'The control plane is up.') },
});

/** Liveness only; the status of every component is in modules/status. */
export function healthRoutes() {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  app.openapi(healthRoute, (c) => c.json({ data: { status: 'ok' as const } }, 200));
  return app;
}
