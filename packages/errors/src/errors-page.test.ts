import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from './catalog.ts';
import { renderErrorsPage } from './errors-page.ts';

const page = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');

describe('docs/errors.md', () => {
  it('is what the catalogue and the renderers say today (else run pnpm docs:generate)', () => {
    expect(page).toBe(renderErrorsPage());
  });

  it('names every code of the catalogue', () => {
    for (const code of ERROR_CODES) expect(page).toContain(`| \`${code}\` |`);
  });
});
