import { AppError, type FieldErrors, renderControlPlaneError } from '@tollgate/errors';
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { z } from 'zod';
import type { AppEnv } from './env.ts';

/** The one error handler: renders the control-plane body and logs only server faults. */
export function handleError(error: unknown, c: Context<AppEnv>): Response {
  const appError = error instanceof HTTPException ? fromHttpException(error) : error;
  const rendered = renderControlPlaneError(appError);
  if (rendered.status >= 500) {
    c.get('logger').error({ err: error, path: c.req.path }, 'request failed');
  }
  for (const [name, value] of Object.entries(rendered.headers)) c.header(name, value);
  return c.json(rendered.body, rendered.status as 500);
}

export function handleNotFound(c: Context<AppEnv>): Response {
  const rendered = renderControlPlaneError(new AppError('not_found'));
  return c.json(rendered.body, 404);
}

function fromHttpException(error: HTTPException): AppError {
  // Hono raises these for malformed bodies (e.g. invalid JSON) before our validators run.
  if (error.status === 400 || error.status === 422) {
    return AppError.validation({ body: ['Send a valid JSON body.'] });
  }
  // The OpenAPI validator's media-type gate: a form or text body where JSON is declared.
  if (error.status === 415) {
    return AppError.validation({ body: ['Send the body as JSON (Content-Type: application/json).'] });
  }
  if (error.status === 401) return new AppError('unauthenticated');
  if (error.status === 404) return new AppError('not_found');
  return new AppError('server_error');
}

/** zod issues -> `{field: [messages]}` for validation_failed; zod's raw output never leaves. */
export function fieldErrorsOf(error: z.ZodError, whole = 'body'): FieldErrors {
  const errors: FieldErrors = {};
  for (const issue of error.issues) {
    const field = issue.path.length > 0 ? issue.path.map(String).join('.') : whole;
    const list = errors[field] ?? [];
    list.push(issue.message);
    errors[field] = list;
  }
  return errors;
}

/** What failed validation, in the words of the message, by the validator's target. */
const TARGETS: Record<string, { message: string; whole: string }> = {
  query: { message: 'The query parameters failed validation.', whole: 'query' },
  param: { message: 'The path parameters failed validation.', whole: 'path' },
  header: { message: 'The request headers failed validation.', whole: 'headers' },
  cookie: { message: 'The request cookies failed validation.', whole: 'cookies' },
};

/**
 * defaultHook for OpenAPIHono: every request-validation failure becomes validation_failed, its
 * message naming the part of the request that failed (the catalogue's wording is the body's).
 * Valid input is also refused when a string in it holds a NUL character, which Postgres cannot
 * store (it would fail as a server error deep in a query), so no route needs to remember it.
 */
export function validationHook(result: {
  success: boolean;
  error?: z.ZodError;
  data?: unknown;
  target?: string;
}): void {
  const target = result.target ? TARGETS[result.target] : undefined;
  if (!result.success) {
    if (!result.error) return;
    if (!target) throw AppError.validation(fieldErrorsOf(result.error));
    throw AppError.validation(fieldErrorsOf(result.error, target.whole), target.message);
  }
  const field = nulField(result.data, [], target?.whole ?? 'body');
  if (field === null) return;
  const errors = { [field]: ['Must not contain a NUL character.'] };
  if (!target) throw AppError.validation(errors);
  throw AppError.validation(errors, target.message);
}

/** Path of the first string (or object key) holding U+0000, or null. Depth is bounded by the validated schema. */
function nulField(value: unknown, path: string[], whole: string): string | null {
  const name = () => (path.length > 0 ? path.join('.') : whole);
  if (typeof value === 'string') return value.includes('\u0000') ? name() : null;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index += 1) {
      const found = nulField(value[index], [...path, String(index)], whole);
      if (found !== null) return found;
    }
    return null;
  }
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    for (const [key, item] of Object.entries(value)) {
      if (key.includes('\u0000')) return name();
      const found = nulField(item, [...path, key], whole);
      if (found !== null) return found;
    }
  }
  return null;
}
