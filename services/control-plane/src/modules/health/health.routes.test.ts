import { OpenAPIHono } from '@hono/zod-openapi';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import type { Database } from '../../db/schema.ts';
import type { AppEnv } from '../../http/env.ts';
import { healthRoutes } from './health.routes.ts';

let context: TestContext;
beforeAll(async () => {
  context = await createTestContext('health');
});
afterAll(() => context.close());

describe('GET /api/v1/health', () => {
  it('reports liveness without a credential', async () => {
    const response = await context.publicApp.request('/api/v1/health');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ data: { status: 'ok' } });
  });

  it('answers unknown routes with the control-plane not_found body', async () => {
    const response = await context.publicApp.request('/api/v1/no-such-route');
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ message: 'Not found.', code: 'not_found' });
  });

  it('publishes an OpenAPI 3.1 document', async () => {
    const response = await context.publicApp.request('/api/v1/openapi.json');
    const document = (await response.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(document.openapi).toBe('3.1.0');
    expect(Object.keys(document.paths)).toContain('/api/v1/health');
  });

  it('refuses the internal API without a service token', async () => {
    const response = await context.internalApp.request('/internal/v1/keys/resolve', { method: 'POST' });
    expect(response.status).toBe(401);
    expect(((await response.json()) as { code: string }).code).toBe('unauthenticated');
  });
});

describe('GET /api/v1/livez and /readyz', () => {
  it('answers liveness and readiness while the database answers', async () => {
    const live = await context.publicApp.request('/api/v1/livez');
    expect(live.status).toBe(200);
    const ready = await context.publicApp.request('/api/v1/readyz');
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ data: { status: 'ready', checks: { database: 'ok' } } });
  });

  it('is live but not ready when the database does not answer', async () => {
    const pool = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/none', max: 1 });
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    const app = new OpenAPIHono<AppEnv>();
    app.use('*', async (c, next) => {
      c.set('deps', { db } as never);
      await next();
    });
    app.route('/', healthRoutes());
    try {
      expect((await app.request('/livez')).status).toBe(200);
      const ready = await app.request('/readyz');
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({ data: { status: 'not_ready', checks: { database: 'failing' } } });
    } finally {
      await db.destroy();
    }
  });

  it('documents both probes', async () => {
    const response = await context.publicApp.request('/api/v1/openapi.json');
    const document = (await response.json()) as { paths: Record<string, unknown> };
    expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(['/api/v1/livez', '/api/v1/readyz']));
  });
});
