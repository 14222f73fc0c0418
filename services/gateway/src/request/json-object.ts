import { AppError } from '@tollgate/errors';

/**
 * Parses a request body that must be a JSON object. Anything else (invalid JSON, an array, a
 * string, null) is refused with invalid_request. Keys such as `__proto__` stay plain own
 * properties: JSON.parse never touches prototypes.
 */
export function parseJsonObject(raw: Buffer | string): Record<string, unknown> {
  const text = typeof raw === 'string' ? raw : raw.toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new AppError('invalid_request', { message: 'The request body is not valid JSON.' });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new AppError('invalid_request', { message: 'The request body must be a JSON object.' });
  }
  return value as Record<string, unknown>;
}
