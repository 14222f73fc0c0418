import type { Logger } from '@tollgate/service-kit';
import type { Limiter, LimiterSettings } from './limiter.ts';
import { createMemoryLimiter } from './memory-limiter.ts';
import { createRedisLimiter } from './redis-limiter.ts';

export function createLimiter(options: {
  redisUrl: string | undefined;
  /** REDIS_URL is a seed node of a Redis Cluster. */
  redisCluster?: boolean;
  redisKeyPrefix: string;
  settings: LimiterSettings;
  logger: Logger;
}): Limiter {
  if (!options.redisUrl) {
    options.logger.warn('REDIS_URL is not set: using an in-process limiter (one gateway process only)');
    return createMemoryLimiter(options.settings);
  }
  options.logger.info('limits shared through Redis');
  const target = { url: options.redisUrl, cluster: options.redisCluster ?? false };
  return createRedisLimiter(target, options.redisKeyPrefix, options.settings, options.logger);
}
