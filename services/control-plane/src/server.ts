import { createAdaptorServer } from '@hono/node-server';
import {
  connectRedis,
  createLogger,
  createTracing,
  type Listening,
  type Logger,
  listen,
  serveMetrics,
  serverOptions,
} from '@tollgate/service-kit';
import type { ControlPlaneConfig } from './config.ts';
import { openDatabase } from './db/database.ts';
import { migrateToLatest } from './db/migrate.ts';
import { assembleDependencies, type Dependencies } from './deps.ts';
import { createMemoryPublisher, createRedisPublisher } from './events.ts';
import { createPublicApp } from './http/app.ts';
import { createInternalApi } from './http/internal-api.ts';
import { tracedListener } from './http/tracing.ts';
import { createControlPlaneMetrics } from './metrics/metrics.ts';
import { startReconciler } from './modules/billing/reconciler.ts';
import { startUsageRollup } from './modules/billing/usage-rollup.ts';
import { syncCatalog } from './modules/catalog/catalog.service.ts';
import { loadCatalogFile } from './modules/catalog/catalog-file.ts';
import { startBillingNotices } from './modules/notifications/notifications.service.ts';
import { startPaymentReconciler } from './modules/payments/payment-reconciler.ts';
import { startStatusSampler } from './modules/status/status.service.ts';
import { watchAutoTopUps } from './modules/top-ups/auto-top-up.service.ts';

export interface RunningControlPlane {
  deps: Dependencies;
  publicServer: Listening;
  internalServer: Listening;
  close(): Promise<void>;
}

/** Builds every dependency once, migrates, and serves the public and internal apps. */
export async function startControlPlane(
  config: ControlPlaneConfig,
  options: { logger?: Logger } = {},
): Promise<RunningControlPlane> {
  const logger = options.logger ?? createLogger({ name: 'control-plane', level: config.logLevel });
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    poolSize: config.databasePoolSize,
    idleTimeoutMs: config.databaseIdleTimeoutMs,
    // A CLI command that opened the folder while no control plane ran is done within seconds.
    embeddedOwnerWaitMs: 15_000,
    dataDir: config.dataDir,
  });
  const applied = await migrateToLatest(database.db);
  logger.info({ mode: database.mode, applied }, 'database ready');

  const events = config.redisUrl
    ? createRedisPublisher(
        connectRedis({ url: config.redisUrl, cluster: config.redisCluster }, { maxRetriesPerRequest: 1 }),
        config.redisKeyPrefix,
        logger,
      )
    : createMemoryPublisher();

  const deps = assembleDependencies({ config, logger, database, events });
  if (deps.billing.kind === 'hot')
    logger.info('reservations answered from the hot tier (Redis), finished calls written to Postgres');
  watchAutoTopUps(deps);

  if (config.catalogFile) {
    await syncCatalog(
      deps,
      await loadCatalogFile(config.catalogFile, config.env, config.providerSecretPrefix),
    );
    logger.info({ file: config.catalogFile }, 'catalogue synced');
  }
  const reconciler = startReconciler(deps);
  const usageRollup = startUsageRollup(deps);
  const sampler = startStatusSampler(deps);
  const paymentReconciler = startPaymentReconciler(deps);

  const publicApp = createPublicApp(deps);
  const billingNotices = startBillingNotices(deps, publicApp.mailer);
  const internalApi = createInternalApi(deps);
  const publicServer = await listen(
    createAdaptorServer({ fetch: publicApp.fetch, serverOptions: serverOptions(config.http) }) as never,
    config.port,
    config.host,
    config.http,
  );
  const metrics = config.metrics ? createControlPlaneMetrics() : undefined;
  if (metrics && database.pool) metrics.watchPool(database.pool);
  const tracing = await createTracing({
    serviceName: 'tollgate-control-plane',
    otlpEndpoint: config.otlpEndpoint,
    logger,
  });
  const listener = tracedListener(tracing, internalApi.listener);
  const internalServer = await listen(
    metrics ? metrics.measureInternal(listener) : listener,
    config.internalPort,
    config.internalHost,
    // The gateways share a few addresses and keep pools of connections: never capped.
    { ...config.http, maxConnectionsPerAddress: 0 },
  );
  const metricsServer =
    metrics && config.metrics
      ? await serveMetrics(metrics.registry, config.metrics.port, config.metrics.host)
      : null;
  if (metricsServer) logger.info({ url: `${metricsServer.url}/metrics` }, 'metrics listening');
  logger.info({ url: publicServer.url }, 'control plane listening');
  logger.info({ url: internalServer.url }, 'internal billing API listening');

  return {
    deps,
    publicServer,
    internalServer,
    async close() {
      reconciler.stop();
      usageRollup.stop();
      sampler.stop();
      paymentReconciler.stop();
      billingNotices.stop();
      await Promise.all([publicServer.close(), internalServer.close(), metricsServer?.close()]);
      // Emails accepted before the stop still go out (they stay in the outbox either way).
      await publicApp.mailer.drain();
      await events.close();
      await deps.billing.close();
      await database.close();
      await tracing.close();
    },
  };
}
