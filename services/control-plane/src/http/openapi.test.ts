/** Every operation of the served OpenAPI document has an operationId, unique across it. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../../test/context.ts';
import { operationIdOf, withOperationIds } from './openapi.ts';

let context: TestContext;
beforeAll(async () => {
  context = await createTestContext('openapi-operation-ids');
});
afterAll(() => context.close());

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

describe('operationId', () => {
  it('is on every operation of the document, unique and usable as an identifier', async () => {
    const response = await context.publicApp.request('/api/v1/openapi.json');
    expect(response.status).toBe(200);
    const document = (await response.json()) as {
      openapi: string;
      components: { schemas: Record<string, { properties?: Record<string, { pattern?: string }> }> };
      paths: Record<string, Record<string, { operationId?: string }>>;
    };
    expect(document.openapi).toBe('3.1.0');
    const ids: string[] = [];
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (!METHODS.has(method)) continue;
        expect(operation.operationId, `${method} ${path}`).toMatch(/^[a-z][A-Za-z0-9]*$/);
        ids.push(operation.operationId!);
      }
    }
    expect(ids.length).toBeGreaterThan(20);
    expect(new Set(ids).size).toBe(ids.length);
    expect(document.paths['/api/v1/me/usage/summary']?.get?.operationId).toBe('getMeUsageSummary');
    expect(document.paths['/api/v1/me/api-keys/{id}/rotate']?.post?.operationId).toBe(
      'postMeApiKeysByIdRotate',
    );
  });

  it('keeps an id a route names itself and never repeats one', () => {
    expect(operationIdOf('delete', '/api/v1/me/sessions/{id}')).toBe('deleteMeSessionsById');
    expect(operationIdOf('put', '/api/v1/admin/catalog/aliases/{alias}')).toBe(
      'putAdminCatalogAliasesByAlias',
    );
    const document = withOperationIds({
      paths: {
        '/api/v1/a-b': { get: {}, post: { operationId: 'getAB' } },
        '/api/v1/a/b': { get: {} },
        '/api/v1/c': { parameters: [], get: { operationId: 'named' } },
      } as Record<string, Record<string, { operationId?: string } | unknown[]>>,
    });
    const paths = document.paths as Record<string, Record<string, { operationId?: string }>>;
    expect(paths['/api/v1/a-b']?.post?.operationId).toBe('getAB');
    expect(paths['/api/v1/a-b']?.get?.operationId).toBe('getAB2');
    expect(paths['/api/v1/a/b']?.get?.operationId).toBe('getAB3');
    expect(paths['/api/v1/c']?.get?.operationId).toBe('named');
  });
});

describe('the body limit in the document', () => {
  it('documents 413 request_too_large on every operation that takes a body, and the limit answers it', async () => {
    const response = await context.publicApp.request('/api/v1/openapi.json');
    const document = (await response.json()) as {
      components: { schemas: Record<string, unknown> };
      paths: Record<
        string,
        Record<string, { requestBody?: unknown; responses?: Record<string, { content?: unknown }> }>
      >;
    };
    expect(document.components.schemas.Error).toBeDefined();
    let withBody = 0;
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (!METHODS.has(method)) continue;
        if (operation.requestBody) {
          withBody += 1;
          expect(operation.responses?.['413']?.content, `${method} ${path}`).toEqual({
            'application/json': { schema: { $ref: '#/components/schemas/Error' } },
          });
        } else if (method === 'get') {
          expect(operation.responses?.['413'], `${method} ${path}`).toBeUndefined();
        }
      }
    }
    expect(withBody).toBeGreaterThan(10);
    expect(document.paths['/api/v1/auth/login']?.post?.responses?.['413']).toBeDefined();
    // What the document promises is what the route answers.
    const tooLarge = await context.publicApp.request('/api/v1/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'a@example.com', password: 'x'.repeat(2_000_000) }),
    });
    expect(tooLarge.status).toBe(413);
    expect(((await tooLarge.json()) as { code: string }).code).toBe('request_too_large');
  });
});

describe('a named schema that may be null', () => {
  it('is documented as anyOf [ref, null], so generated clients type the null', async () => {
    const response = await context.publicApp.request('/api/v1/openapi.json');
    const document = (await response.json()) as {
      components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
    };
    const property = (schema: string, name: string) =>
      document.components.schemas[schema]?.properties?.[name];
    const nullMoney = { anyOf: [{ $ref: '#/components/schemas/Money' }, { type: 'null' }] };
    expect(property('Promotion', 'amountOff')).toEqual(nullMoney);
    expect(property('Order', 'payment')).toMatchObject({
      anyOf: [{ $ref: '#/components/schemas/Payment' }, { type: 'null' }],
    });
    expect(property('CatalogModel', 'price')).toMatchObject({
      anyOf: [{ $ref: '#/components/schemas/ModelPrice' }, { type: 'null' }],
    });
  });
});
