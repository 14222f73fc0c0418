import { describe, expect, it } from 'vitest';
import {
  findKeyValue,
  findLastKeyValue,
  firstKeyIs,
  looksLikeJsonObject,
  readCount,
  readPlainString,
} from './json-scan.ts';

describe('json-scan', () => {
  const chunk = '{"id":"c","choices":[{"delta":{"content":"say \\"usage\\": now"}}],"usage" : null}';

  it('finds keys, never the same words inside string values', () => {
    expect(chunk.slice(findKeyValue(chunk, '"usage"'))).toBe('null}');
    expect(chunk.slice(findLastKeyValue(chunk, '"usage"'))).toBe('null}');
    expect(findKeyValue('{"text":"\\"usage\\": 1"}', '"usage"')).toBe(-1);
    expect(findLastKeyValue('{"type":"usage"}', '"usage"')).toBe(-1);
    const nested = '{"a":{"type":"x"},"type":"y"}';
    expect(nested.slice(findKeyValue(nested, '"type"', 10))).toBe('"y"}');
  });

  it('tells whether the first member is a given key', () => {
    expect(firstKeyIs(' {\n "error" : {"message":"x"}}', '"error"')).toBe(true);
    expect(firstKeyIs('{"id":"x","error":{}}', '"error"')).toBe(false);
    expect(firstKeyIs('{"errors":[]}', '"error"')).toBe(false);
  });

  it('recognises object-shaped text without parsing it', () => {
    expect(looksLikeJsonObject(' {"a":1}\n')).toBe(true);
    expect(looksLikeJsonObject('{"a":')).toBe(false);
    expect(looksLikeJsonObject('[DONE]')).toBe(false);
    expect(looksLikeJsonObject('')).toBe(false);
  });

  it('reads plain strings and exact counts', () => {
    expect(readPlainString('"gpt-4o",', 0)).toEqual({ value: 'gpt-4o', end: 8 });
    expect(readPlainString('"a\\"b"', 0)).toBeNull();
    expect(readPlainString('null', 0)).toBeNull();
    expect(readCount(9_007_199_254_740_991)).toBe(9_007_199_254_740_991n);
    expect([readCount(2 ** 53), readCount(-1), readCount(1.5), readCount('5'), readCount(null)]).toEqual([
      null,
      null,
      null,
      null,
      null,
    ]);
  });
});
