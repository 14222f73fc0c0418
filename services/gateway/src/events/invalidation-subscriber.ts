import { INVALIDATION_CHANNEL, InvalidationEvent } from '@tollgate/schemas';
import { connectRedis, type Logger, type RedisTarget } from '@tollgate/service-kit';

export interface InvalidationHandlers {
  keyChanged(keyId: string): void;
  accountChanged(accountId: string): void;
  catalogChanged(): void;
  /** The connection was lost: events may have been missed, so forget everything cached. */
  resync(): void;
}

/** Listens for the control plane's invalidation events on Redis pub/sub. */
export function subscribeToInvalidations(
  redisUrl: string | RedisTarget,
  prefix: string,
  handlers: InvalidationHandlers,
  logger: Logger,
): { close(): Promise<void> } {
  const channel = `${prefix}${INVALIDATION_CHANNEL}`;
  const subscriber = connectRedis(redisUrl, { maxRetriesPerRequest: null, lazyConnect: false });
  let connectedBefore = false;
  subscriber.on('ready', () => {
    if (connectedBefore) handlers.resync();
    connectedBefore = true;
  });
  subscriber.on('error', (error) => logger.debug({ err: error }, 'invalidation subscriber error'));
  subscriber.subscribe(channel).catch((error: unknown) => logger.warn({ err: error }, 'could not subscribe'));
  subscriber.on('message', (_channel, message) => {
    let event: InvalidationEvent;
    try {
      event = InvalidationEvent.parse(JSON.parse(message));
    } catch {
      logger.warn('ignored a malformed invalidation event');
      return;
    }
    if (event.type === 'key.changed') handlers.keyChanged(event.keyId);
    else if (event.type === 'account.changed') handlers.accountChanged(event.accountId);
    else handlers.catalogChanged();
  });
  return {
    async close() {
      subscriber.disconnect();
    },
  };
}
