import { AppError } from '@tollgate/errors';
import { describe, expect, it } from 'vitest';
import { parseJsonObject } from './json-object.ts';

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return (error as AppError).code;
  }
  return undefined;
}

describe('parseJsonObject', () => {
  it('parses an object from a Buffer or a string', () => {
    expect(parseJsonObject(Buffer.from('{"model":"m","n":1}'))).toEqual({ model: 'm', n: 1 });
    expect(parseJsonObject(' {"a":[1,{"b":null}]} ')).toEqual({ a: [1, { b: null }] });
  });

  it('decodes UTF-8 text', () => {
    expect(parseJsonObject(Buffer.from('{"text":"héllo 🌍"}'))).toEqual({ text: 'héllo 🌍' });
  });

  it('refuses invalid JSON and every non-object with invalid_request', () => {
    for (const body of ['', '{', '{"a":1,}', 'null', '[]', '[{"a":1}]', '"text"', '42', 'true']) {
      expect(codeOf(() => parseJsonObject(body))).toBe('invalid_request');
    }
  });

  it('says whether the body was not JSON or not an object', () => {
    expect(() => parseJsonObject('{')).toThrow(/not valid JSON/);
    expect(() => parseJsonObject('[1]')).toThrow(/must be a JSON object/);
  });

  it('keeps a __proto__ key as an own property', () => {
    const body = parseJsonObject('{"__proto__":{"polluted":true}}');
    expect(Object.keys(body)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses nesting deeper than the limit before parsing, counting only brackets outside strings', () => {
    expect(parseJsonObject('{"a":[[[1]]]}', 4)).toEqual({ a: [[[1]]] });
    expect(codeOf(() => parseJsonObject('{"a":[[[[1]]]]}', 4))).toBe('invalid_request');
    expect(() => parseJsonObject('{"a":[[[[1]]]]}', 4)).toThrow(/deeper than 4/);
    // Brackets inside strings (and escaped quotes) are text, not nesting.
    expect(parseJsonObject('{"t":"[[[[[[\\"[[[["}', 2)).toEqual({ t: '[[[[[["[[[[' });
  });

  it('refuses five million nested arrays quickly, without parsing them', () => {
    const body = `{"x":${'['.repeat(5_000_000)}${']'.repeat(5_000_000)}}`;
    const started = performance.now();
    expect(codeOf(() => parseJsonObject(body))).toBe('invalid_request');
    expect(performance.now() - started).toBeLessThan(100);
  });
});
