import { describe, expect, it } from 'vitest';
import {
  DirectiveError,
  directivesDrawn,
  directivesForKey,
  directivesForModel,
  readDirectives,
} from './directives.ts';

describe('readDirectives', () => {
  it('finds nothing in a plain body without a header', () => {
    expect(readDirectives(undefined, '{"messages":[{"content":"hi"}]}')).toEqual({});
  });

  it('reads a marker anywhere in the body text', () => {
    const body = JSON.stringify({
      messages: [{ content: 'please @mock(status=503, retry_after=7,tag=a-1) now' }],
    });
    expect(readDirectives(undefined, body)).toEqual({ status: 503, retryAfter: 7, tag: 'a-1' });
  });

  it('reads every directive kind', () => {
    const list =
      'delay=1,first_byte_delay=2,chunk_delay=3,invalid_json,no_usage,cut_after=4,stream_error,' +
      'input_tokens=5,output_tokens=6,cache_read=7,cache_write=8,reasoning_tokens=9,words=10,tool';
    expect(readDirectives(list, '')).toEqual({
      delay: 1,
      firstByteDelay: 2,
      chunkDelay: 3,
      invalidJson: true,
      noUsage: true,
      cutAfter: 4,
      streamError: true,
      inputTokens: 5,
      outputTokens: 6,
      cacheRead: 7,
      cacheWrite: 8,
      reasoningTokens: 9,
      words: 10,
      tool: true,
    });
  });

  it('lets the header override the body, and accepts the marker form in the header', () => {
    const directives = readDirectives('@mock(words=2)', 'x @mock(words=9,tag=body) y');
    expect(directives).toEqual({ words: 2, tag: 'body' });
  });

  it('refuses unknown keys, bad numbers, flags with values and an unclosed marker', () => {
    expect(() => readDirectives('stauts=503', '')).toThrow(DirectiveError);
    expect(() => readDirectives('words=-1', '')).toThrow(/non-negative integer/);
    expect(() => readDirectives('delay=soon', '')).toThrow(DirectiveError);
    expect(() => readDirectives('status=200', '')).toThrow(/400-599/);
    expect(() => readDirectives('tool=yes', '')).toThrow(/takes no value/);
    expect(() => readDirectives(undefined, '@mock(words=2')).toThrow(/not closed/);
  });
});

describe('only_model', () => {
  it('keeps the faults for that model and drops them for any other', () => {
    const directives = readDirectives('only_model=up-a,status=503,delay=5,output_tokens=7,tag=t', '');
    expect(directivesForModel(directives, 'up-a')).toMatchObject({ status: 503, delay: 5 });
    expect(directivesForModel(directives, 'up-b')).toEqual({ onlyModel: 'up-a', outputTokens: 7, tag: 't' });
  });
});

describe('only_key', () => {
  it('keeps the faults for calls sending that provider key and drops them for any other', () => {
    const directives = readDirectives('only_key=sk-a,status=429,retry_after=2,output_tokens=7', '');
    expect(directivesForKey(directives, { authorization: 'Bearer sk-a' })).toMatchObject({
      status: 429,
      retryAfter: 2,
    });
    expect(directivesForKey(directives, { 'x-api-key': 'sk-a' })).toMatchObject({ status: 429 });
    expect(directivesForKey(directives, { authorization: 'Bearer sk-b' })).toEqual({
      onlyKey: 'sk-a',
      outputTokens: 7,
    });
    expect(directivesForKey(directives, {})).not.toHaveProperty('status');
  });
});

describe('fail_percent', () => {
  it('keeps the faults for that share of the calls and drops them for the rest', () => {
    const directives = readDirectives('status=500,retry_after=2,fail_percent=30,output_tokens=7', '');
    expect(directivesDrawn(directives, () => 0.29)).toMatchObject({ status: 500, retryAfter: 2 });
    expect(directivesDrawn(directives, () => 0.3)).toEqual({ failPercent: 30, outputTokens: 7 });
    let failed = 0;
    for (let call = 0; call < 2_000; call++) if (directivesDrawn(directives).status === 500) failed++;
    expect(failed / 2_000).toBeGreaterThan(0.25);
    expect(failed / 2_000).toBeLessThan(0.35);
    expect(() => readDirectives('fail_percent=101', '')).toThrow(DirectiveError);
  });
});
