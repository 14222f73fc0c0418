import { createLogger } from '@tollgate/service-kit';
import { loadConfig } from '../config.ts';
import type { Dependencies } from '../deps.ts';
import { createPublicApp } from './app.ts';
import { openApiDocumentOf } from './openapi.ts';

const UNUSED_SECRET = '0'.repeat(64);

/**
 * The public API's OpenAPI document without a running service (`pnpm api:types` makes the
 * dashboard's types from it): the routes are registered on an app whose database and other
 * dependencies are never called, since no request is made.
 */
export function describePublicApi() {
  const config = loadConfig({
    INTERNAL_TOKEN_SECRET: UNUSED_SECRET,
    KEY_PEPPER: UNUSED_SECRET,
    KEY_ENCRYPTION_KEY: UNUSED_SECRET,
  });
  const unused = new Proxy(
    {},
    {
      get() {
        throw new Error('describePublicApi: no dependency may be used to describe the API');
      },
    },
  ) as never;
  const deps: Dependencies = {
    config,
    logger: createLogger({ name: 'openapi', level: 'silent' }),
    db: unused,
    prepared: unused,
    dbMode: 'postgres',
    clock: { now: () => new Date(0) },
    events: unused,
    billing: unused,
    caps: unused,
    settled: unused,
  };
  return openApiDocumentOf(createPublicApp(deps));
}
