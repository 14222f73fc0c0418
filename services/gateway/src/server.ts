import { getRequestListener } from '@hono/node-server';
import type { FinishItem, ReserveItem } from '@tollgate/schemas';
import {
  createLogger,
  createTracing,
  type Listening,
  type Logger,
  listen,
  serveMetrics,
} from '@tollgate/service-kit';
import { createControlPlaneClient } from './billing/control-plane-client.ts';
import { createFinishQueue } from './billing/finish-queue.ts';
import {
  createFilePendingStore,
  createMirroredPendingStore,
  createRedisPendingStore,
  type PendingStore,
} from './billing/pending-store.ts';
import { createReserveBatcher } from './billing/reserve-batcher.ts';
import { createSlotKeeper } from './billing/slot-keeper.ts';
import { createCatalogCache } from './catalog/catalog-cache.ts';
import type { GatewayConfig } from './config.ts';
import type { GatewayDependencies } from './deps.ts';
import { subscribeToInvalidations } from './events/invalidation-subscriber.ts';
import { createGatewayApp } from './http/app.ts';
import { createMeteredRoutes } from './http/metered-routes.ts';
import { createReadiness } from './http/readiness.ts';
import { createKeyCache } from './keys/key-cache.ts';
import { createUnknownKeyGuard } from './keys/unknown-keys.ts';
import { createLimiter } from './limiter/create-limiter.ts';
import { timedReserve, timedUpstream } from './metrics/instrument.ts';
import { createGatewayMetrics, measuredBatch } from './metrics/metrics.ts';
import { createMemoryAffinityStore, createRedisAffinityStore } from './routing/affinity-store.ts';
import { createMemoryBreakerStore } from './routing/breaker-store.ts';
import { createBreakers } from './routing/breakers.ts';
import { createCooldowns } from './routing/cooldowns.ts';
import { createCredentialPools } from './routing/credential-pool.ts';
import { createRedisBreakerStore } from './routing/redis-breaker-store.ts';
import { createHeartbeat } from './status/heartbeat.ts';
import { createTokenCounter } from './tokens/token-counter.ts';
import { tracedUpstream } from './tracing/traced-upstream.ts';
import { createUpstreamClient, loadCredentials } from './upstream/index.ts';

export interface RunningGateway {
  deps: GatewayDependencies;
  server: Listening;
  /** Sends every queued settle/release/hold now; resolves when the control plane has them. */
  drainBilling(deadlineMs?: number): Promise<boolean>;
  close(): Promise<void>;
}

/** Builds every dependency once and serves the gateway. */
export async function startGateway(
  config: GatewayConfig,
  options: { logger?: Logger } = {},
): Promise<RunningGateway> {
  const logger = options.logger ?? createLogger({ name: 'gateway', level: config.logLevel });
  const tracing = await createTracing({
    serviceName: 'tollgate-gateway',
    otlpEndpoint: config.otlpEndpoint,
    logger,
  });
  const controlPlane = createControlPlaneClient({
    traceparent: tracing.outgoing,
    baseUrl: config.controlPlaneUrl,
    secret: config.internalTokenSecret,
    timeoutMs: config.billing.timeoutMs,
    connections: config.billing.connections,
  });
  const metrics = config.metrics ? createGatewayMetrics() : undefined;
  const limiter = createLimiter({
    redisUrl: config.redisUrl,
    redisCluster: config.redisCluster,
    redisKeyPrefix: config.redisKeyPrefix,
    settings: config.limits,
    logger,
  });
  const reserveBatch = (items: ReserveItem[]) => controlPlane.reserve(items, limiter.shared);
  const slots = createSlotKeeper(controlPlane.renewSlots, { leaseTtlMs: config.limits.leaseTtlMs, logger });
  const reserver = createReserveBatcher(measuredBatch(metrics, 'reserve', reserveBatch), {
    maxInFlight: config.billing.reserveMaxInFlight,
    maxBatch: 100,
    timeoutMs: config.billing.timeoutMs,
  });
  const pending = config.redisUrl
    ? createMirroredPendingStore(
        createRedisPendingStore(
          { url: config.redisUrl, cluster: config.redisCluster },
          config.redisKeyPrefix,
          logger,
        ),
        createFilePendingStore(config.dataDir, logger),
        logger,
      )
    : createFilePendingStore(config.dataDir, logger);
  const finishes = createFinishQueue(measuredBatch(metrics, 'finish', controlPlane.finish), {
    flushIntervalMs: config.billing.finishFlushMs,
    maxBatch: 200,
    maxInFlight: 2,
    maxQueued: config.billing.finishMaxQueued,
    spill: (items) => pending.save(items),
    logger,
  });
  await deliverKept(pending, finishes.enqueue, logger);
  const catalog = createCatalogCache(controlPlane.catalog, { refreshMs: config.catalogRefreshMs, logger });
  // Without Redis there are no change events, so nothing is cached: every request asks.
  const keys = createKeyCache(controlPlane.resolveKey, {
    ttlMs: config.redisUrl ? config.keyCacheTtlMs : 0,
    maxEntries: 100_000,
  });
  const subscription = config.redisUrl
    ? subscribeToInvalidations(
        { url: config.redisUrl, cluster: config.redisCluster },
        config.redisKeyPrefix,
        {
          keyChanged: (keyId) => keys.dropKey(keyId),
          accountChanged: (accountId) => keys.dropAccount(accountId),
          catalogChanged: () => {
            catalog.reload().catch(() => {});
          },
          resync: () => {
            keys.clear();
            catalog.reload().catch(() => {});
          },
        },
        logger,
      )
    : null;
  const upstream = tracedUpstream(tracing, timedUpstream(metrics, createUpstreamClient(config.upstream)));
  const credentials = loadCredentials({
    env: config.env,
    prefix: config.providerSecretPrefix,
    ...(config.secretsFile ? { secretsFile: config.secretsFile } : {}),
  });

  const affinity = config.redisUrl
    ? createRedisAffinityStore(
        { url: config.redisUrl, cluster: config.redisCluster },
        { prefix: config.redisKeyPrefix, ttlMs: config.routing.affinityTtlMs, logger },
      )
    : createMemoryAffinityStore({ ttlMs: config.routing.affinityTtlMs, maxEntries: 100_000 });
  const credentialPools = createCredentialPools({ recheckMs: config.routing.credentialRecheckMs });
  const breakers = createBreakers({ store: breakerStoreOf(config, logger), logger, metrics });
  const heartbeat = createHeartbeat({
    send: controlPlane.heartbeat,
    providerOf: (alias) => catalog.alias(alias)?.providerId,
    refusedCredentials: () => credentialPools.refusals(),
    upstreamBreakers: () => breakers.report(),
    intervalMs: config.heartbeatIntervalMs,
    redisUrl: config.redisUrl,
    logger,
  });

  const deps: GatewayDependencies = {
    config,
    logger,
    limiter,
    billing: {
      reserve: timedReserve(metrics, reserver.reserve),
      finish: (item, onResult) => {
        heartbeat.record(item);
        finishes.enqueue(item, onResult);
      },
      settledFor: finishes.settledFor,
      keyStatus: controlPlane.keyStatus,
      receipt: controlPlane.receipt,
      holdSlot: slots.hold,
    },
    keys,
    unknownKeys: createUnknownKeyGuard({
      ttlMs: config.unknownKeys.ttlMs,
      perAddress: config.unknownKeys.perAddressPerMinute,
      windowMs: 60_000,
      maxEntries: 100_000,
    }),
    catalog,
    cooldowns: createCooldowns(config.routing),
    credentialPools,
    affinity,
    breakers,
    tokens: createTokenCounter({ threads: config.countTokens.threads, maxJsonDepth: config.maxJsonDepth }),
    credentials,
    upstream,
    ...(metrics ? { metrics } : {}),
    tracing,
  };
  metrics?.watchPending(() => finishes.pending());
  catalog
    .ready()
    .catch((error: unknown) => logger.warn({ err: error }, 'catalogue not loaded yet; will retry'));
  catalog.start();

  const readiness = createReadiness({
    controlPlaneUrl: config.controlPlaneUrl,
    redisUrl: config.redisUrl ? { url: config.redisUrl, cluster: config.redisCluster } : undefined,
    logger,
  });
  const metered = createMeteredRoutes(deps);
  const others = getRequestListener(createGatewayApp(deps, { readiness }).fetch);
  const server = await listen(
    (request, response) => {
      if (!metered(request, response)) void others(request, response);
    },
    config.port,
    config.host,
    config.http,
  );
  logger.info({ url: server.url, limiter: limiter.kind }, 'gateway listening');
  heartbeat.start();
  const metricsServer =
    metrics && config.metrics
      ? await serveMetrics(metrics.registry, config.metrics.port, config.metrics.host)
      : null;
  if (metricsServer) logger.info({ url: `${metricsServer.url}/metrics` }, 'metrics listening');

  return {
    deps,
    server,
    drainBilling: (deadlineMs) => finishes.drain(deadlineMs),
    async close() {
      await heartbeat.stop();
      await server.close();
      await metricsServer?.close();
      const drained = await finishes.drain(config.billing.shutdownDrainMs);
      const left = finishes.stop();
      if (!drained && left.length > 0) await keep(pending, left, logger);
      await pending.close();
      catalog.stop();
      await subscription?.close();
      slots.close();
      await limiter.close();
      await affinity.close();
      await readiness.close();
      await upstream.close();
      await deps.breakers.close();
      await deps.tokens.close();
      await controlPlane.close();
      await tracing.close();
    },
  };
}

/** Shared through Redis when there is one; this process's own without; none when turned off. */
function breakerStoreOf(config: GatewayConfig, logger: Logger) {
  const settings = config.routing.breakers;
  if (!settings) return null;
  if (!config.redisUrl) return createMemoryBreakerStore(settings);
  return createRedisBreakerStore(
    { url: config.redisUrl, cluster: config.redisCluster },
    config.redisKeyPrefix,
    settings,
    logger,
  );
}

/** Queues what an earlier run (of any gateway, with Redis) could not deliver. */
async function deliverKept(
  store: PendingStore,
  enqueue: (item: FinishItem) => void,
  logger: Logger,
): Promise<void> {
  try {
    const kept = await store.take();
    for (const item of kept) enqueue(item);
    if (kept.length > 0)
      logger.info({ items: kept.length, store: store.kind }, 'delivering kept settlements');
  } catch (error) {
    logger.error(
      { err: error, store: store.kind },
      'kept settlements could not be read; will retry at next start',
    );
  }
}

/** Keeps undelivered settlements durably; only if that fails too are they left to the reconciler. */
async function keep(store: PendingStore, items: FinishItem[], logger: Logger): Promise<void> {
  try {
    await store.save(items);
    logger.warn(
      { items: items.length, store: store.kind },
      'settlements not yet delivered were kept for later',
    );
  } catch (error) {
    logger.error(
      { err: error, items: items.length, reservationIds: items.map((item) => item.reservationId) },
      'settlements could not be delivered or kept: the reconciler holds them as settlement_missing',
    );
  }
}
