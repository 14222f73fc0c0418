import { createAdaptorServer } from '@hono/node-server';
import { createLogger, type Listening, type Logger, listen } from '@tollgate/service-kit';
import type { GatewayConfig } from './config.ts';
import type { GatewayDependencies } from './deps.ts';
import { createGatewayApp } from './http/app.ts';
import { createLimiter } from './limiter/create-limiter.ts';

export interface RunningGateway {
  deps: GatewayDependencies;
  server: Listening;
  close(): Promise<void>;
}

export async function startGateway(
  config: GatewayConfig,
  options: { logger?: Logger } = {},
): Promise<RunningGateway> {
  const logger = options.logger ?? createLogger({ name: 'gateway', level: config.logLevel });
  const limiter = createLimiter({ redisUrl: config.redisUrl, logger });
  const deps: GatewayDependencies = { config, logger, limiter };
  const app = createGatewayApp(deps);
  const server = await listen(createAdaptorServer({ fetch: app.fetch }) as never, config.port, config.host);
  logger.info({ url: server.url }, 'gateway listening');
  return {
    deps,
    server,
    async close() {
      await server.close();
      await limiter.close();
    },
  };
}
