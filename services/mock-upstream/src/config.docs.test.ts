import { readFileSync } from 'node:fs';
import { readPageSection, renderEnvSection } from '@tollgate/service-kit';
import { describe, expect, it } from 'vitest';
import { loadConfig, MOCK_UPSTREAM_VARIABLES } from './config.ts';

const page = readFileSync(new URL('../../../docs/operations/configuration.md', import.meta.url), 'utf8');

describe('docs/operations/configuration.md', () => {
  it('lists every variable of the mock upstream as its config.ts reads it (else run pnpm docs:generate)', () => {
    const expected = renderEnvSection(
      'Mock upstream',
      'services/mock-upstream/src/config.ts',
      MOCK_UPSTREAM_VARIABLES,
    );
    expect(readPageSection(page, 'Mock upstream')).toBe(expected);
  });
});

describe('MOCK_UPSTREAM_VARIABLES', () => {
  it('names exactly the variables loadConfig reads, with the defaults it applies', () => {
    const source = readFileSync(new URL('./config.ts', import.meta.url), 'utf8');
    const read = new Set([...source.matchAll(/\benv\.([A-Z][A-Z0-9_]+)/g)].map((match) => match[1]));
    expect([...read].sort()).toEqual(MOCK_UPSTREAM_VARIABLES.map((variable) => variable.name).sort());
    const defaults = loadConfig({});
    const documented = (name: string) =>
      MOCK_UPSTREAM_VARIABLES.find((variable) => variable.name === name)?.default;
    expect(String(defaults.port)).toBe(documented('MOCK_UPSTREAM_PORT'));
    expect(defaults.host).toBe(documented('MOCK_UPSTREAM_HOST'));
    expect(defaults.logLevel).toBe(documented('LOG_LEVEL'));
    expect(defaults.expectedApiKey === undefined ? 'unset' : 'set').toBe(documented('MOCK_UPSTREAM_API_KEY'));
  });
});
