import type { Logger } from '@tollgate/service-kit';
import type { Limiter, LimiterSettings } from './limiter.ts';
import { createMemoryLimiter } from './memory-limiter.ts';
import { createRedisLimiter } from './redis-limiter.ts';

export function createLimiter(options: {
  redisUrl: string | undefined;
  redisKeyPrefix: string;
  settings: LimiterSettings;
  logger: Logger;
}): Limiter {
  if (!options.redisUrl) {
    options.logger.warn('REDIS_URL is not set: using an in-process limiter (one gateway process only)');
    return createMemoryLimiter(options.settings);
  }
  options.logger.info('limits shared through Redis');
  return createRedisLimiter(options.redisUrl, options.redisKeyPrefix, options.settings, options.logger);
}
