import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../../../test/context.ts';

let context: TestContext;
beforeAll(async () => {
  context = await createTestContext('openapi-identity');
});
afterAll(() => context.close());

interface Operation {
  security?: Array<Record<string, string[]>>;
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, unknown>;
}

describe('GET /api/v1/openapi.json', () => {
  it('documents every identity route with bodies, errors and the cookie and CSRF schemes', async () => {
    const response = await context.publicApp.request('/api/v1/openapi.json');
    const document = (await response.json()) as {
      paths: Record<string, Record<string, Operation>>;
      components: { securitySchemes: Record<string, { type: string; in: string; name: string }> };
    };
    expect(document.components.securitySchemes.sessionCookie).toMatchObject({ type: 'apiKey', in: 'cookie' });
    expect(document.components.securitySchemes.csrfToken).toMatchObject({
      in: 'header',
      name: 'X-CSRF-Token',
    });

    const expected: Array<[string, string, 'none' | 'session' | 'csrf']> = [
      ['post', '/api/v1/auth/register/code', 'none'],
      ['post', '/api/v1/auth/register', 'none'],
      ['post', '/api/v1/auth/login', 'none'],
      ['post', '/api/v1/auth/logout', 'csrf'],
      ['post', '/api/v1/auth/forgot-password', 'none'],
      ['post', '/api/v1/auth/reset-password', 'none'],
      ['get', '/api/v1/me', 'session'],
      ['patch', '/api/v1/me', 'csrf'],
      ['post', '/api/v1/me/password', 'csrf'],
      ['get', '/api/v1/me/sessions', 'session'],
      ['delete', '/api/v1/me/sessions/{id}', 'csrf'],
      ['get', '/api/v1/me/api-keys', 'session'],
      ['post', '/api/v1/me/api-keys', 'csrf'],
      ['post', '/api/v1/me/api-keys/{id}/rotate', 'csrf'],
      ['patch', '/api/v1/me/api-keys/{id}/status', 'csrf'],
      ['get', '/api/v1/me/api-keys/{id}/status', 'session'],
      ['post', '/api/v1/me/api-keys/{id}/reveal', 'csrf'],
      ['get', '/api/v1/admin/accounts', 'session'],
      ['patch', '/api/v1/admin/accounts/{id}/status', 'csrf'],
      ['get', '/api/v1/reseller/customers', 'session'],
    ];
    for (const [method, path, security] of expected) {
      const operation = document.paths[path]?.[method];
      expect(operation, `${method} ${path}`).toBeDefined();
      if (!operation) continue;
      const schemes = Object.keys(operation.security?.[0] ?? {}).sort();
      const wanted = { none: [], session: ['sessionCookie'], csrf: ['csrfToken', 'sessionCookie'] }[security];
      expect(schemes, `${method} ${path}`).toEqual(wanted);
      const errorStatuses = Object.keys(operation.responses).filter((status) => status.startsWith('4'));
      expect(errorStatuses.length, `${method} ${path}`).toBeGreaterThan(0);
      if (
        ['post', 'patch'].includes(method) &&
        !path.endsWith('/rotate') &&
        !path.endsWith('/reveal') &&
        !path.endsWith('/logout')
      ) {
        expect(operation.requestBody?.content['application/json'], `${method} ${path}`).toBeDefined();
      }
    }
  });
});
