import { z } from '@hono/zod-openapi';
import { ERROR_CODES } from '@tollgate/errors';

/** Control-plane error body, as documented in the OpenAPI description. */
export const ErrorBody = z
  .object({
    message: z.string(),
    code: z.enum(ERROR_CODES as [string, ...string[]]),
    errors: z.record(z.string(), z.array(z.string())).optional(),
  })
  .openapi('Error');

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
