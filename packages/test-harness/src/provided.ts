/** What the harness's globalSetup provides to every test file through vitest's `inject`. */
declare module 'vitest' {
  export interface ProvidedContext {
    testServices: { postgresUrl: string; redisUrl: string };
  }
}

export {};
