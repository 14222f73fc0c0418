import { INVALIDATION_CHANNEL, type InvalidationEvent } from '@tollgate/schemas';
import type { Logger, RedisConnection } from '@tollgate/service-kit';

/** Tells gateways that cached keys, accounts or the catalogue changed. */
export interface EventPublisher {
  publish(event: InvalidationEvent): Promise<void>;
  close(): Promise<void>;
}

export function createRedisPublisher(redis: RedisConnection, prefix: string, logger: Logger): EventPublisher {
  const channel = `${prefix}${INVALIDATION_CHANNEL}`;
  return {
    async publish(event) {
      try {
        await redis.publish(channel, JSON.stringify(event));
      } catch (error) {
        // Gateways still re-check every metered call at reserve time; a lost event only delays
        // cache expiry for the read-only endpoints.
        logger.warn({ err: error, event: event.type }, 'could not publish invalidation');
      }
    },
    async close() {
      redis.disconnect();
    },
  };
}

/** Without Redis (embedded mode) gateways do not cache keys, so there is nobody to tell. */
export function createMemoryPublisher(): EventPublisher & { events: InvalidationEvent[] } {
  const events: InvalidationEvent[] = [];
  return {
    events,
    async publish(event) {
      events.push(event);
    },
    async close() {},
  };
}

/** The billing engine may cache the catalogue (the hot tier does, briefly): a change made here drops it at once. */
export function withCatalogHook(events: EventPublisher, engine: { catalogChanged(): void }): EventPublisher {
  return {
    async publish(event) {
      if (event.type === 'catalog.changed') engine.catalogChanged();
      await events.publish(event);
    },
    close: () => events.close(),
  };
}
