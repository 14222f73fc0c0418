import type { Logger } from '@tollgate/service-kit';
import { Redis } from 'ioredis';
import type { Limiter } from './limiter.ts';

export function createLimiter(options: { redisUrl: string | undefined; logger: Logger }): Limiter {
  if (!options.redisUrl) {
    options.logger.warn('REDIS_URL is not set: using an in-process limiter (one gateway process only)');
    return { kind: 'memory', close: async () => {} };
  }
  const redis = new Redis(options.redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false });
  redis.on('error', (error) => options.logger.warn({ err: error }, 'redis error'));
  options.logger.info('limits shared through Redis');
  return {
    kind: 'redis',
    async close() {
      redis.disconnect();
    },
  };
}
