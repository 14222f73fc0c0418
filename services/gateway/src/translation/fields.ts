import { AppError } from '@tollgate/errors';

/** Helpers every decoder uses to read the caller's JSON and to refuse what cannot be mapped. */

export type Json = Record<string, unknown>;

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The caller sent a field no upstream of this alias can express (docs/behaviour.md, gateway rule 6). */
export function unsupported(field: string, detail?: string): AppError {
  const name = field.length > 96 ? `${field.slice(0, 96)}...` : field;
  return new AppError('unsupported_parameter', {
    message: `Unsupported parameter: ${name}${detail ? ` (${detail})` : ''}`,
  });
}

/** The caller's body does not have the shape its protocol requires. */
export function malformed(field: string, expected: string): AppError {
  return new AppError('invalid_request', { message: `${field} must be ${expected}.` });
}

/** The upstream's answer does not have the shape its protocol promises. */
export function invalidAnswer(): AppError {
  return new AppError('upstream_invalid_response');
}

export function readString(value: unknown, field: string): string {
  if (typeof value !== 'string') throw malformed(field, 'a string');
  return value;
}

export function readArray(value: unknown, field: string): unknown[] {
  if (!Array.isArray(value)) throw malformed(field, 'an array');
  return value;
}

export function readObject(value: unknown, field: string): Json {
  if (!isObject(value)) throw malformed(field, 'an object');
  return value;
}

export function readOptionalNumber(value: unknown, field: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw malformed(field, 'a number');
  return value;
}

/** Refuses every member of `object` outside `known` (nested allow-lists, like the top level's). */
export function assertKnownKeys(object: Json, known: readonly string[], field: string): void {
  for (const key of Object.keys(object)) {
    if (!known.includes(key)) throw unsupported(`${field}.${key}`);
  }
}

/** Parses tool-call arguments the upstream or caller sent as JSON text into an object. */
export function parseArguments(text: string): Json {
  if (text.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : { value };
  } catch {
    // Arguments cut by max_tokens are not valid JSON; keep what came, as a provider would.
    return { _raw: text };
  }
}

/** A data: URL split into media type and base64 data, or null. */
export function parseDataUrl(url: string): { mediaType: string; data: string } | null {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return match ? { mediaType: match[1]!, data: match[2]! } : null;
}

let counter = 0;
/** An id for something the upstream did not name (a tool call without id). Unique per process. */
export function generatedId(prefix: string): string {
  counter = (counter + 1) % 1_000_000_000;
  return `${prefix}${Date.now().toString(36)}${counter.toString(36)}`;
}

/** Refuses the caller's extras an upstream protocol cannot express; returns the ones it can. */
export function expressibleExtras<F extends string>(
  extras: ReadonlyArray<{ feature: string; value: unknown; field: string }>,
  supported: readonly F[],
): Map<F, unknown> {
  const found = new Map<F, unknown>();
  for (const extra of extras) {
    if (!(supported as readonly string[]).includes(extra.feature)) throw unsupported(extra.field);
    found.set(extra.feature as F, extra.value);
  }
  return found;
}

/** A token count as the protocols write it: a non-negative safe integer, else null. */
export function count(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
}

/** The JSON object of one SSE event, or null for anything else (the relay has judged it already). */
export function parseEventData(data: string): Json | null {
  try {
    const parsed: unknown = JSON.parse(data);
    return isObject(parsed) ? parsed : null;
  } catch {
    return null;
  }
}
