import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { Redis } from 'ioredis';
import pg from 'pg';

export interface TestServices {
  /** Admin connection to a Postgres server; each test file creates its own database on it. */
  postgresUrl: string;
  redisUrl: string;
  /** Where each came from, for the run's log. */
  sources: { postgres: ServiceSource; redis: ServiceSource };
}

export type ServiceSource = 'env' | 'testcontainers' | 'localhost';

const LOCAL_POSTGRES = 'postgres://postgres@127.0.0.1:5432/postgres';
const LOCAL_REDIS = 'redis://127.0.0.1:6379';

const HOW_TO_PROVIDE = [
  'Tests need a real Postgres and Redis. Provide them in one of these ways:',
  '  - set TEST_DATABASE_URL (a Postgres URL whose user may CREATE DATABASE) and TEST_REDIS_URL;',
  '  - run a Docker engine, so testcontainers can start postgres:17-alpine and redis:7-alpine;',
  '  - run Postgres on 127.0.0.1:5432 (user postgres, trust auth) and Redis on 127.0.0.1:6379.',
].join('\n');

async function postgresAnswers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

async function redisAnswers(url: string): Promise<boolean> {
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: 2_000,
    retryStrategy: () => null,
  });
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

/** A Docker engine is reachable when its API answers /_ping. */
async function dockerEngineReachable(): Promise<boolean> {
  const host = process.env.DOCKER_HOST;
  const socketPath = host?.startsWith('unix://')
    ? host.slice('unix://'.length)
    : host
      ? undefined
      : '/var/run/docker.sock';
  if (host && !socketPath) return true; // tcp:// engines: let testcontainers try.
  if (!socketPath || !existsSync(socketPath)) return false;
  return new Promise((resolve) => {
    const probe = request({ socketPath, path: '/_ping', timeout: 2_000 }, (response) => {
      response.resume();
      resolve(response.statusCode === 200);
    });
    probe.on('error', () => resolve(false));
    probe.on('timeout', () => {
      probe.destroy();
      resolve(false);
    });
    probe.end();
  });
}

export interface StartedServices extends TestServices {
  stop(): Promise<void>;
}

/**
 * Finds Postgres and Redis for a test run: TEST_DATABASE_URL / TEST_REDIS_URL if set; else
 * testcontainers when a Docker engine answers; else 127.0.0.1. Fails (never skips) when none works.
 */
export async function startTestServices(
  env: Record<string, string | undefined> = process.env,
): Promise<StartedServices> {
  const stops: Array<() => Promise<unknown>> = [];
  const docker = !env.TEST_DATABASE_URL || !env.TEST_REDIS_URL ? await dockerEngineReachable() : false;

  let postgresUrl: string;
  let postgresSource: ServiceSource;
  if (env.TEST_DATABASE_URL) {
    postgresUrl = env.TEST_DATABASE_URL;
    postgresSource = 'env';
  } else if (docker) {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    const container = await new PostgreSqlContainer('postgres:17-alpine').start();
    stops.push(() => container.stop());
    postgresUrl = container.getConnectionUri();
    postgresSource = 'testcontainers';
  } else {
    postgresUrl = LOCAL_POSTGRES;
    postgresSource = 'localhost';
  }

  let redisUrl: string;
  let redisSource: ServiceSource;
  if (env.TEST_REDIS_URL) {
    redisUrl = env.TEST_REDIS_URL;
    redisSource = 'env';
  } else if (docker) {
    const { RedisContainer } = await import('@testcontainers/redis');
    const container = await new RedisContainer('redis:7-alpine').start();
    stops.push(() => container.stop());
    redisUrl = container.getConnectionUrl();
    redisSource = 'testcontainers';
  } else {
    redisUrl = LOCAL_REDIS;
    redisSource = 'localhost';
  }

  const [postgresOk, redisOk] = await Promise.all([postgresAnswers(postgresUrl), redisAnswers(redisUrl)]);
  if (!postgresOk || !redisOk) {
    await Promise.all(stops.map((stop) => stop()));
    const missing = [
      postgresOk ? null : `Postgres (${postgresSource}) did not answer`,
      redisOk ? null : `Redis (${redisSource}) did not answer`,
    ].filter(Boolean);
    throw new Error(`${missing.join('; ')}.\n${HOW_TO_PROVIDE}`);
  }

  return {
    postgresUrl,
    redisUrl,
    sources: { postgres: postgresSource, redis: redisSource },
    async stop() {
      await Promise.all(stops.map((stop) => stop()));
    },
  };
}
