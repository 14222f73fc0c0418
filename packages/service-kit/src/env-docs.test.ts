import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { blankToUndefined } from './config.ts';
import { describeEnvSchema, readPageSection, renderEnvSection } from './env-docs.ts';

const withDefault = <T extends z.ZodType>(schema: T, fallback: z.input<T>) =>
  z.preprocess(blankToUndefined, schema.prefault(fallback as never));

describe('describeEnvSchema', () => {
  it('reads name, default, accepted values and description from the schema', () => {
    const schema = z.object({
      PORT: withDefault(z.coerce.number().int().min(0).max(65535), 8080).describe('Port.'),
      SECRET: z.string().min(32).describe('A secret.'),
      URL: z.preprocess(blankToUndefined, z.string().url().optional()).describe('Where.'),
      FLAG: withDefault(z.enum(['true', 'false', '1', '0']), 'false').describe('On or off.'),
    });
    expect(describeEnvSchema(schema)).toEqual([
      { name: 'PORT', default: '8080', accepts: 'integer, 0-65535', description: 'Port.' },
      {
        name: 'SECRET',
        default: 'required',
        accepts: 'text, at least 32 characters',
        description: 'A secret.',
      },
      { name: 'URL', default: 'unset', accepts: 'URL', description: 'Where.' },
      { name: 'FLAG', default: 'false', accepts: '`true` or `false` (`1`, `0`)', description: 'On or off.' },
    ]);
  });

  it('refuses a variable without a description, so none reaches the page unexplained', () => {
    expect(() => describeEnvSchema(z.object({ QUIET: z.string() }))).toThrow(/QUIET has no description/);
  });
});

describe('readPageSection', () => {
  it('finds a rendered section between other sections', () => {
    const section = renderEnvSection('B', 'b.ts', [
      { name: 'X', default: 'unset', accepts: 'text', description: 'a | b' },
    ]);
    const page = ['# Page', '', renderEnvSection('A', 'a.ts', []), section, '## C', '', 'text'].join('\n');
    expect(readPageSection(page, 'B')).toBe(section);
    expect(section).toContain('| `X` | unset | text | a \\| b |');
    expect(readPageSection(page, 'D')).toBeUndefined();
  });
});
