import { ConfigError, createLogger, DEFAULT_SERVER_LIMITS, listen, onShutdown } from '@tollgate/service-kit';
import { loadConfig } from './config.ts';
import { createMockUpstream } from './server.ts';

try {
  const config = loadConfig();
  const logger = createLogger({ name: 'mock-upstream', level: config.logLevel });
  const server = createMockUpstream({ expectedApiKey: config.expectedApiKey });
  // A provider stand-in: every gateway of a test or benchmark calls it from one address, uncapped.
  const running = await listen(server, config.port, config.host, {
    ...DEFAULT_SERVER_LIMITS,
    maxConnectionsPerAddress: 0,
  });
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
