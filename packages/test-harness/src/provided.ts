// A type-only import puts vitest in the program of packages that import the harness without using
// vitest themselves (bench), so the augmentation below has a module to augment. Erased at runtime.
import type {} from 'vitest';
import type { ServicesUnderTest } from './containers.ts';

/** What the harness's globalSetup provides to every test file through vitest's `inject`. */
declare module 'vitest' {
  export interface ProvidedContext {
    testServices: {
      postgresUrl: string;
      redisUrl: string;
      /** A migrated database to copy (`createTestDatabase(url, label, { template })`), when built. */
      templateDatabase?: string;
    };
    servicesUnderTest: ServicesUnderTest;
  }
}
