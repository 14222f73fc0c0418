import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../../testing.ts';

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
