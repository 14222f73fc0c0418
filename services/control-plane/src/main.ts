import { ConfigError, createLogger, onShutdown } from '@tollgate/service-kit';
import { loadConfig } from './config.ts';
import { startControlPlane } from './server.ts';

try {
  const config = loadConfig();
  const logger = createLogger({ name: 'control-plane', level: config.logLevel });
  const running = await startControlPlane(config, { logger });
  onShutdown(logger, () => running.close());
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(2);
  }
  console.error('control plane failed to start:', error instanceof Error ? error.message : error);
  process.exit(1);
}
