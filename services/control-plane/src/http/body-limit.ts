import { AppError } from '@tollgate/errors';
import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { AppEnv } from './env.ts';

/** A route allowed a larger body than the default (matched on method and path). */
export interface BodyLimitOverride {
  method: string;
  path: RegExp;
  maxBytes: number;
}

export interface BodyLimitOptions {
  defaultMaxBytes: number;
  overrides?: readonly BodyLimitOverride[];
}

/**
 * Refuses a body over the limit while it is read, before any route parses it: a declared
 * Content-Length over the limit is refused unread; a chunked or undeclared body is counted as it
 * streams in and refused at the first byte past the limit, so no body is ever held whole.
 * The connection is closed after the 413 so the rest of an oversized upload is not drained.
 */
export function limitBodySize(options: BodyLimitOptions): MiddlewareHandler<AppEnv> {
  const refuse = (maxBytes: number) => () => {
    throw new AppError('request_too_large', {
      message: `The request body is over the limit of ${maxBytes} bytes for this route.`,
    });
  };
  const defaultLimit = bodyLimit({
    maxSize: options.defaultMaxBytes,
    onError: refuse(options.defaultMaxBytes),
  });
  const overrides = (options.overrides ?? []).map((override) => ({
    ...override,
    method: override.method.toUpperCase(),
    limit: bodyLimit({ maxSize: override.maxBytes, onError: refuse(override.maxBytes) }),
  }));
  return async (c, next) => {
    const override = overrides.find((entry) => entry.method === c.req.method && entry.path.test(c.req.path));
    try {
      return await (override?.limit ?? defaultLimit)(c, next);
    } catch (error) {
      if (error instanceof AppError && error.code === 'request_too_large') c.header('Connection', 'close');
      throw error;
    }
  };
}
