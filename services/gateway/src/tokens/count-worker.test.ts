import { describe, expect, it } from 'vitest';
import { estimateInputTokens } from './count-tokens.ts';
import countBody from './count-worker.ts';

const encode = (value: unknown) =>
  new TextEncoder().encode(typeof value === 'string' ? value : JSON.stringify(value));

describe('countBody (the count_tokens worker)', () => {
  it('returns the model, the estimate the main thread would compute, and no refusal', () => {
    const body = { model: 'claude-test', messages: [{ role: 'user', content: 'Hello there' }] };
    expect(countBody({ body: encode(body), maxJsonDepth: 64 })).toEqual({
      ok: true,
      model: 'claude-test',
      unsupported: null,
      inputTokens: estimateInputTokens('count_tokens', body),
    });
  });

  it('names unsupported fields, passes no model that is not a string, and cuts a long one', () => {
    const result = countBody({ body: encode({ model: 7, messages: [], max_tokens: 5 }), maxJsonDepth: 64 });
    expect(result).toMatchObject({
      ok: true,
      model: null,
      unsupported: expect.stringContaining('max_tokens'),
    });
    const long = countBody({ body: encode({ model: 'm'.repeat(5000), messages: [] }), maxJsonDepth: 64 });
    expect(long.ok && long.model?.length).toBe(256);
  });

  it('refuses what is not a JSON object, or nests too deeply', () => {
    expect(countBody({ body: encode('{not json'), maxJsonDepth: 64 })).toEqual({
      ok: false,
      message: 'The request body is not valid JSON.',
    });
    expect(countBody({ body: encode('[[[[1]]]]'), maxJsonDepth: 2 })).toMatchObject({ ok: false });
  });
});
