/**
 * Cheap looks into JSON text, so the stream relay parses only the few events that carry usage.
 * They rely on one property of JSON: a quote inside a string value is always escaped, so
 * `"usage"` followed by a colon can only be an object key.
 */

const OPEN_BRACE = 123; // {
const CLOSE_BRACE = 125; // }
const QUOTE = 34;
const BACKSLASH = 92;
const COLON = 58;

function isJsonSpace(code: number): boolean {
  return code === 32 || code === 10 || code === 13 || code === 9;
}

/**
 * True when the text is shaped like one JSON object (first and last non-space characters are
 * braces). Catches cut, empty and non-JSON events without parsing them.
 */
export function looksLikeJsonObject(text: string): boolean {
  let start = 0;
  let end = text.length - 1;
  while (start <= end && isJsonSpace(text.charCodeAt(start))) start++;
  while (end > start && isJsonSpace(text.charCodeAt(end))) end--;
  return text.charCodeAt(start) === OPEN_BRACE && text.charCodeAt(end) === CLOSE_BRACE;
}

/** Offset of the value after a key found at `at` (skipping `: `), or -1 when it is not a key. */
function valueAfterKey(text: string, at: number, quotedKey: string): number {
  let position = at + quotedKey.length;
  while (isJsonSpace(text.charCodeAt(position))) position++;
  if (text.charCodeAt(position) !== COLON) return -1;
  position++;
  while (isJsonSpace(text.charCodeAt(position))) position++;
  return position;
}

/**
 * Offset of the value of the first member named `quotedKey` (given with its quotes, e.g.
 * `'"type"'`) at or after `from`, at any depth; -1 when there is none.
 */
export function findKeyValue(text: string, quotedKey: string, from = 0): number {
  for (let at = text.indexOf(quotedKey, from); at !== -1; at = text.indexOf(quotedKey, at + 1)) {
    const value = valueAfterKey(text, at, quotedKey);
    if (value !== -1) return value;
  }
  return -1;
}

/** Like findKeyValue, but the last member: cheap for keys that providers write last (`usage`). */
export function findLastKeyValue(text: string, quotedKey: string): number {
  for (
    let at = text.lastIndexOf(quotedKey);
    at !== -1;
    at = at === 0 ? -1 : text.lastIndexOf(quotedKey, at - 1)
  ) {
    const value = valueAfterKey(text, at, quotedKey);
    if (value !== -1) return value;
  }
  return -1;
}

/** True when the object's first member is `quotedKey`. */
export function firstKeyIs(text: string, quotedKey: string): boolean {
  let position = 0;
  while (isJsonSpace(text.charCodeAt(position))) position++;
  if (text.charCodeAt(position) !== OPEN_BRACE) return false;
  position++;
  while (isJsonSpace(text.charCodeAt(position))) position++;
  return text.startsWith(quotedKey, position) && valueAfterKey(text, position, quotedKey) !== -1;
}

/**
 * The string value at a value offset found by `findKeyValue`, with its end offset; null when the
 * value is not a string or uses escapes (an id with escapes is not worth the cost of decoding).
 */
export function readPlainString(text: string, at: number): { value: string; end: number } | null {
  if (text.charCodeAt(at) !== QUOTE) return null;
  for (let position = at + 1; position < text.length; position++) {
    const code = text.charCodeAt(position);
    if (code === QUOTE) return { value: text.slice(at + 1, position), end: position + 1 };
    if (code === BACKSLASH) return null;
  }
  return null;
}

/** A token count as a bigint: a non-negative safe integer, else null. */
export function readCount(value: unknown): bigint | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? BigInt(value) : null;
}

/** A present count, or zero when absent or null (optional cache figures). */
export function readOptionalCount(value: unknown): bigint | null {
  return value === undefined || value === null ? 0n : readCount(value);
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** JSON.parse that answers undefined instead of throwing. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
