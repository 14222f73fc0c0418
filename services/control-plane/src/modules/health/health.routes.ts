import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { sql } from 'kysely';
import type { AppEnv } from '../../http/env.ts';
import { validationHook } from '../../http/errors.ts';
import { dataOf, jsonContent } from '../../http/openapi.ts';

const Health = z.object({ status: z.literal('ok') }).openapi('Health');

const ComponentStatus = z.enum(['operational', 'degraded', 'down']);
const Status = z
  .object({
    status: ComponentStatus,
    components: z.array(z.object({ name: z.string(), status: ComponentStatus })),
    checkedAt: z.string(),
  })
  .openapi('ServiceStatus');

const healthRoute = createRoute({
  method: 'get',
  path: '/health',
  tags: ['public'],
  summary: 'Control-plane liveness',
  responses: { 200: jsonContent(dataOf(Health), 'The control plane is up.') },
});

const statusRoute = createRoute({
  method: 'get',
  path: '/status',
  tags: ['public'],
  summary: 'Service status for the status page',
  responses: { 200: jsonContent(dataOf(Status), 'Status of each component.') },
});

const DATABASE_CHECK_TIMEOUT_MS = 2_000;

export function healthRoutes() {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

  app.openapi(healthRoute, (c) => c.json({ data: { status: 'ok' as const } }, 200));

  app.openapi(statusRoute, async (c) => {
    const { db, clock } = c.get('deps');
    const database = await Promise.race([
      sql`select 1`.execute(db).then(
        () => 'operational' as const,
        () => 'down' as const,
      ),
      new Promise<'down'>((resolve) => setTimeout(() => resolve('down'), DATABASE_CHECK_TIMEOUT_MS).unref()),
    ]);
    const components = [
      { name: 'api', status: 'operational' as const },
      { name: 'database', status: database },
    ];
    const status = database === 'operational' ? 'operational' : 'degraded';
    return c.json({ data: { status, components, checkedAt: clock.now().toISOString() } }, 200);
  });

  return app;
}
