import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema.ts';
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

const Readiness = z
  .object({
    status: z.enum(['ready', 'not_ready']),
    checks: z.object({ database: z.enum(['ok', 'failing']) }),
  })
  .openapi('Readiness');

const livezRoute = createRoute({
  method: 'get',
  path: '/livez',
  tags: ['public'],
  summary: 'Liveness probe (the process answers; never depends on the database)',
  responses: { 200: jsonContent(dataOf(Health), 'The process is up.') },
});

const readyzRoute = createRoute({
  method: 'get',
  path: '/readyz',
  tags: ['public'],
  summary: 'Readiness probe (the database answers)',
  responses: {
    200: jsonContent(dataOf(Readiness), 'Ready to serve.'),
    503: jsonContent(dataOf(Readiness), 'Not ready: a dependency does not answer.'),
  },
});

const DATABASE_CHECK_TIMEOUT_MS = 2_000;

/** Whether the database answers a trivial query within the check's timeout. */
function databaseAnswers(db: Kysely<Database>): Promise<boolean> {
  return Promise.race([
    sql`select 1`.execute(db).then(
      () => true,
      () => false,
    ),
    new Promise<false>((resolve) => setTimeout(() => resolve(false), DATABASE_CHECK_TIMEOUT_MS).unref()),
  ]);
}

/** Liveness and readiness only; the status of every component is in modules/status. */
export function healthRoutes() {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  app.openapi(healthRoute, (c) => c.json({ data: { status: 'ok' as const } }, 200));

  app.openapi(livezRoute, (c) => c.json({ data: { status: 'ok' as const } }, 200));

  app.openapi(readyzRoute, async (c) => {
    const database = (await databaseAnswers(c.get('deps').db)) ? ('ok' as const) : ('failing' as const);
    const status = database === 'ok' ? ('ready' as const) : ('not_ready' as const);
    return c.json({ data: { status, checks: { database } } }, database === 'ok' ? 200 : 503);
  });

  return app;
}
