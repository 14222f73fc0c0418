import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * One run for the whole tree. Unit tests sit beside the code; service tests use real Postgres and
 * Redis (found or started once by the harness's globalSetup, which also migrates one template
 * database that each test database is copied from); test-e2e starts real processes.
 */
const withServices = {
  globalSetup: [fileURLToPath(new URL('./services/control-plane/test/global-setup.ts', import.meta.url))],
};

export default defineConfig({
  test: {
    projects: [
      { test: { name: 'errors', root: 'packages/errors' } },
      { test: { name: 'schemas', root: 'packages/schemas' } },
      { test: { name: 'service-kit', root: 'packages/service-kit' } },
      { test: { name: 'test-harness', root: 'packages/test-harness', testTimeout: 30_000 } },
      { test: { name: 'mock-upstream', root: 'services/mock-upstream' } },
      { test: { name: 'dashboard', root: 'services/dashboard' } },
      {
        test: {
          name: 'control-plane',
          root: 'services/control-plane',
          ...withServices,
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'gateway',
          root: 'services/gateway',
          ...withServices,
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'e2e',
          root: 'test-e2e',
          ...withServices,
          testTimeout: 60_000,
          hookTimeout: 120_000,
          // A browser screen on a loaded CI box can take longer than poll's default second to show.
          expect: { poll: { timeout: 15_000 } },
          fileParallelism: false,
        },
      },
    ],
  },
});
