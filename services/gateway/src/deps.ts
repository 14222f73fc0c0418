import type { Logger } from '@tollgate/service-kit';
import type { GatewayConfig } from './config.ts';
import type { Limiter } from './limiter/limiter.ts';

/** Everything the gateway's routes use, built once in server.ts (or a test) and injected. */
export interface GatewayDependencies {
  config: GatewayConfig;
  logger: Logger;
  limiter: Limiter;
}
