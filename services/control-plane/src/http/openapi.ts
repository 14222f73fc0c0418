import { type OpenAPIHono, z } from '@hono/zod-openapi';
import { ERROR_CODES } from '@tollgate/errors';
import type { AppEnv } from './env.ts';

/** Control-plane error body, as documented in the OpenAPI description. */
export const ErrorBody = z
  .object({
    message: z.string(),
    code: z.enum(ERROR_CODES as [string, ...string[]]),
    errors: z.record(z.string(), z.array(z.string())).optional(),
  })
  .openapi('Error');

/**
 * A named schema or null. `.nullable()` on a named schema loses the null in the document (a bare
 * $ref, or allOf with an object that is also null), so generated clients would type it as never
 * null; a union documents it as anyOf [ref, null].
 */
export function nullableRef<T extends z.ZodType>(schema: T) {
  return z.union([schema, z.null()]);
}

/** `{data: T}`: every successful control-plane body. */
export function dataOf<T extends z.ZodType>(schema: T) {
  return z.object({ data: schema });
}

export function jsonContent<T extends z.ZodType>(schema: T, description: string) {
  return { content: { 'application/json': { schema } }, description };
}

/** Error responses a route can give, for the document. */
export function errorResponses(...statuses: number[]) {
  return Object.fromEntries(statuses.map((status) => [status, jsonContent(ErrorBody, `Error (${status})`)]));
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/**
 * `GET /api/v1/me/api-keys/{id}/rotate` -> `postMeApiKeysByIdRotate`: method, then each path
 * segment after the prefix in camel case, parameters as `By<Name>`.
 */
export function operationIdOf(method: string, path: string, prefix = '/api/v1'): string {
  const rest = path.startsWith(prefix) ? path.slice(prefix.length) : path;
  const words = rest
    .split('/')
    .filter(Boolean)
    .flatMap((segment) => {
      const parameter = /^\{(.+)\}$/.exec(segment);
      return parameter
        ? ['by', ...(parameter[1] ?? '').split(/[^A-Za-z0-9]+/)]
        : segment.split(/[^A-Za-z0-9]+/);
    })
    .filter(Boolean);
  return [method.toLowerCase(), ...words.map((word) => word[0]!.toUpperCase() + word.slice(1))].join('');
}

/**
 * Gives every operation of the document an operationId (code generators need them): the route's
 * own when it names one, else one made from method and path; unique across the document.
 */
export function withOperationIds<T extends { paths?: unknown }>(document: T): T {
  const operations: Array<{ method: string; path: string; operation: { operationId?: string } }> = [];
  const paths = (document.paths ?? {}) as Record<string, Record<string, unknown>>;
  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const operation = item[method] as { operationId?: string } | undefined;
      if (operation) operations.push({ method, path, operation });
    }
  }
  const taken = new Set(operations.map(({ operation }) => operation.operationId).filter(Boolean));
  for (const { method, path, operation } of operations) {
    if (operation.operationId) continue;
    const base = operationIdOf(method, path);
    let id = base;
    for (let n = 2; taken.has(id); n += 1) id = `${base}${n}`;
    taken.add(id);
    operation.operationId = id;
  }
  return document;
}

/**
 * The body limit (limitBodySize) answers 413 `request_too_large` before any route runs, so every
 * operation that takes a body documents it here, in one place, rather than in each route.
 */
export function withBodyLimitResponses<T extends { paths?: unknown }>(document: T): T {
  const paths = (document.paths ?? {}) as Record<string, Record<string, unknown>>;
  for (const item of Object.values(paths)) {
    for (const method of METHODS) {
      const operation = item[method] as
        | { requestBody?: unknown; responses?: Record<string, unknown> }
        | undefined;
      if (!operation?.requestBody) continue;
      operation.responses ??= {};
      operation.responses['413'] ??= {
        description: 'Error (413): the request body is larger than the limit (request_too_large)',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
    }
  }
  return document;
}

/** The public API's OpenAPI document, once every route of `app` is registered. */
export function openApiDocumentOf(app: OpenAPIHono<AppEnv>) {
  return withBodyLimitResponses(
    withOperationIds(
      app.getOpenAPI31Document({
        openapi: '3.1.0',
        info: { title: 'Tollgate control plane', version: '1.0.0' },
      }),
    ),
  );
}
