import { readFileSync } from 'node:fs';
import { describeEnvSchema, readPageSection, renderEnvSection } from '@tollgate/service-kit';
import { describe, expect, it } from 'vitest';
import { GatewayEnv } from './config.ts';

const page = readFileSync(new URL('../../../docs/operations/configuration.md', import.meta.url), 'utf8');

describe('docs/operations/configuration.md', () => {
  it('lists every variable of the gateway as its config.ts reads it (else run pnpm docs:generate)', () => {
    const expected = renderEnvSection(
      'Gateway',
      'services/gateway/src/config.ts',
      describeEnvSchema(GatewayEnv),
    );
    expect(readPageSection(page, 'Gateway')).toBe(expected);
  });
});
