import { ConfigError, createLogger, listen, onShutdown } from '@tollgate/service-kit';
import { loadConfig } from './config.ts';
import { createMockUpstream } from './server.ts';

try {
  const config = loadConfig();
  const logger = createLogger({ name: 'mock-upstream', level: config.logLevel });
  const server = createMockUpstream({ expectedApiKey: config.expectedApiKey });
  const running = await listen(server, config.port, config.host);
  logger.info(
    { url: running.url, checksApiKey: config.expectedApiKey !== undefined },
    'mock upstream listening',
  );
  onShutdown(logger, () => running.close());
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(2);
  }
  console.error('mock upstream failed to start:', error instanceof Error ? error.message : error);
  process.exit(1);
}
