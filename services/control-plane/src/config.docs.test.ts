import { readFileSync } from 'node:fs';
import { describeEnvSchema, readPageSection, renderEnvSection } from '@tollgate/service-kit';
import { describe, expect, it } from 'vitest';
import { ControlPlaneEnv } from './config.ts';

const page = readFileSync(new URL('../../../docs/operations/configuration.md', import.meta.url), 'utf8');

describe('docs/operations/configuration.md', () => {
  it('lists every variable of the control plane as its config.ts reads it (else run pnpm docs:generate)', () => {
    const expected = renderEnvSection(
      'Control plane',
      'services/control-plane/src/config.ts',
      describeEnvSchema(ControlPlaneEnv),
    );
    expect(readPageSection(page, 'Control plane')).toBe(expected);
  });
});
