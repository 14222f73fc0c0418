import { AppError } from '@tollgate/errors';
import { describe, expect, it } from 'vitest';
import { type OutputCeilings, resolveMaxOutput } from './max-output.ts';
import type { Surface } from './surface.ts';

const CEILINGS: OutputCeilings = { keyMax: 10_000, planMax: 4_000, aliasMax: 8_000, aliasDefault: 1_024 };

function refusalCode(surface: Surface, body: Record<string, unknown>, ceilings = CEILINGS): string {
  try {
    resolveMaxOutput(surface, body, ceilings);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return (error as AppError).code;
  }
  throw new Error('expected a refusal');
}

describe('resolveMaxOutput', () => {
  it('keeps a value within every ceiling, pinned so a duplicate key cannot carry another', () => {
    expect(resolveMaxOutput('messages', { max_tokens: 300 }, CEILINGS)).toEqual({
      value: 300,
      edits: { max_tokens: '300' },
    });
    expect(resolveMaxOutput('responses', { max_output_tokens: 4000 }, CEILINGS)).toEqual({
      value: 4000,
      edits: { max_output_tokens: '4000' },
    });
  });

  it('clamps a value above the plan ceiling down to it', () => {
    expect(resolveMaxOutput('messages', { max_tokens: 9_000 }, CEILINGS)).toEqual({
      value: 4_000,
      edits: { max_tokens: '4000' },
    });
  });

  it('clamps to the alias maximum when there is no plan ceiling', () => {
    const ceilings = { ...CEILINGS, planMax: null };
    expect(resolveMaxOutput('responses', { max_output_tokens: 9_000 }, ceilings)).toEqual({
      value: 8_000,
      edits: { max_output_tokens: '8000' },
    });
  });

  it('refuses more than the key permits even where the plan would clamp', () => {
    expect(refusalCode('messages', { max_tokens: 10_001 })).toBe('max_output_tokens_exceeded');
    expect(refusalCode('chat_completions', { max_completion_tokens: 1e20 })).toBe(
      'max_output_tokens_exceeded',
    );
  });

  it('accepts exactly the key allowance and clamps it to the plan', () => {
    expect(resolveMaxOutput('messages', { max_tokens: 10_000 }, CEILINGS).value).toBe(4_000);
  });

  it('refuses anything that is not a positive integer', () => {
    for (const bad of [0, -1, -0, 1.5, 0.5, '100', true, false, [], {}, Number.NaN]) {
      expect(refusalCode('messages', { max_tokens: bad }), String(bad)).toBe('invalid_max_output_tokens');
      expect(refusalCode('responses', { max_output_tokens: bad }), String(bad)).toBe(
        'invalid_max_output_tokens',
      );
      expect(refusalCode('chat_completions', { max_tokens: bad }), String(bad)).toBe(
        'invalid_max_output_tokens',
      );
    }
  });

  it('reads exponent and fraction forms by their JSON value', () => {
    expect(resolveMaxOutput('messages', JSON.parse('{"max_tokens":1e3}'), CEILINGS).value).toBe(1000);
    expect(resolveMaxOutput('messages', JSON.parse('{"max_tokens":1000.0}'), CEILINGS).value).toBe(1000);
    expect(refusalCode('messages', JSON.parse('{"max_tokens":1e-3}'))).toBe('invalid_max_output_tokens');
  });

  it('inserts the default when the field is omitted', () => {
    expect(resolveMaxOutput('messages', {}, CEILINGS)).toEqual({
      value: 1_024,
      edits: { max_tokens: '1024' },
    });
    expect(resolveMaxOutput('chat_completions', {}, CEILINGS)).toEqual({
      value: 1_024,
      edits: { max_completion_tokens: '1024' },
    });
    expect(resolveMaxOutput('responses', {}, CEILINGS)).toEqual({
      value: 1_024,
      edits: { max_output_tokens: '1024' },
    });
  });

  it('keeps the default within the key, plan and alias ceilings', () => {
    const base = { keyMax: 10_000, planMax: null, aliasMax: 10_000, aliasDefault: 9_000 };
    expect(resolveMaxOutput('messages', {}, { ...base, keyMax: 500 }).value).toBe(500);
    expect(resolveMaxOutput('messages', {}, { ...base, planMax: 600 }).value).toBe(600);
    expect(resolveMaxOutput('messages', {}, { ...base, aliasMax: 700 }).value).toBe(700);
  });

  it('treats null as omitted on the OpenAI surfaces but not on messages', () => {
    expect(resolveMaxOutput('responses', { max_output_tokens: null }, CEILINGS).edits).toEqual({
      max_output_tokens: '1024',
    });
    expect(resolveMaxOutput('chat_completions', { max_completion_tokens: null }, CEILINGS).value).toBe(1_024);
    expect(
      resolveMaxOutput('chat_completions', { max_completion_tokens: 50, max_tokens: null }, CEILINGS).edits,
    ).toEqual({ max_completion_tokens: '50', max_tokens: 'null' });
    expect(refusalCode('messages', { max_tokens: null })).toBe('invalid_max_output_tokens');
  });

  it('accepts the deprecated chat max_tokens alone and clamps it in place', () => {
    expect(resolveMaxOutput('chat_completions', { max_tokens: 5_000 }, CEILINGS)).toEqual({
      value: 4_000,
      edits: { max_tokens: '4000' },
    });
  });

  it('checks and clamps both chat fields, reserving for the larger', () => {
    expect(
      resolveMaxOutput('chat_completions', { max_completion_tokens: 100, max_tokens: 9_000 }, CEILINGS),
    ).toEqual({ value: 4_000, edits: { max_completion_tokens: '100', max_tokens: '4000' } });
    expect(refusalCode('chat_completions', { max_completion_tokens: 100, max_tokens: 'x' })).toBe(
      'invalid_max_output_tokens',
    );
    expect(refusalCode('chat_completions', { max_completion_tokens: 20_000, max_tokens: 1 })).toBe(
      'max_output_tokens_exceeded',
    );
  });

  it('names the field in the message', () => {
    try {
      resolveMaxOutput('chat_completions', { max_completion_tokens: 2.5 }, CEILINGS);
    } catch (error) {
      expect((error as AppError).message).toContain('max_completion_tokens');
      expect((error as AppError).status).toBe(400);
    }
    expect.assertions(2);
  });

  it('has nothing to resolve on count_tokens', () => {
    expect(resolveMaxOutput('count_tokens', { max_tokens: 'ignored' }, CEILINGS)).toEqual({
      value: 0,
      edits: {},
    });
  });
});
