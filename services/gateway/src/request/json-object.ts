import { AppError } from '@tollgate/errors';

/** The documented default of GATEWAY_MAX_JSON_DEPTH. */
const DEFAULT_MAX_JSON_DEPTH = 64;

/**
 * Whether JSON text nests arrays/objects deeper than `maxDepth`, found by one pass over the text
 * (strings skipped) before any parsing: a body of millions of nested brackets would otherwise
 * hold the event loop and memory inside JSON.parse. Malformed text is left to the parser.
 */
function exceedsJsonDepth(text: string, maxDepth: number): boolean {
  if (text.length <= maxDepth) return false;
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === 92)
        index++; // backslash: the next character is escaped
      else if (code === 34) inString = false;
    } else if (code === 34) {
      inString = true;
    } else if (code === 123 || code === 91) {
      if (++depth > maxDepth) return true;
    } else if (code === 125 || code === 93) {
      depth--;
    }
  }
  return false;
}

/**
 * Parses a request body that must be a JSON object. Anything else (invalid JSON, an array, a
 * string, null) or nested deeper than
 * `maxDepth` is refused with invalid_request. Keys such as `__proto__` stay plain own
 * properties: JSON.parse never touches prototypes.
 */
export function parseJsonObject(
  raw: Buffer | string,
  maxDepth = DEFAULT_MAX_JSON_DEPTH,
): Record<string, unknown> {
  const text = typeof raw === 'string' ? raw : raw.toString('utf8');
  if (exceedsJsonDepth(text, maxDepth)) {
    throw new AppError('invalid_request', {
      message: `The request body nests JSON deeper than ${maxDepth} levels.`,
    });
  }
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
