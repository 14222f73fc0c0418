import { createLogger, listen, onShutdown } from '@tollgate/service-kit';
import { createMockUpstream } from './server.ts';

const port = Number(process.env.MOCK_UPSTREAM_PORT ?? 8090);
const host = process.env.MOCK_UPSTREAM_HOST ?? '127.0.0.1';
const logger = createLogger({ name: 'mock-upstream', level: process.env.LOG_LEVEL ?? 'info' });
const running = await listen(createMockUpstream(), port, host);
logger.info({ url: running.url }, 'mock upstream listening');
onShutdown(logger, () => running.close());
