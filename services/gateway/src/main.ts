import { ConfigError, createLogger, onShutdown } from '@tollgate/service-kit';
import { loadConfig } from './config.ts';
import { startGateway } from './server.ts';

try {
  const config = loadConfig();
  const logger = createLogger({ name: 'gateway', level: config.logLevel });
  const running = await startGateway(config, { logger });
  onShutdown(logger, () => running.close());
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(2);
  }
  console.error('gateway failed to start:', error instanceof Error ? error.message : error);
  process.exit(1);
}
