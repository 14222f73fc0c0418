import { Redis } from 'ioredis';
import pg from 'pg';
import { type DockerEngine, findDockerEngine } from './docker-engine.ts';

export interface TestServices {
  /** Admin connection to a Postgres server; each test file creates its own database on it. */
  postgresUrl: string;
  redisUrl: string;
  /** Where each came from, for the run's log. */
  sources: { postgres: ServiceSource; redis: ServiceSource };
  /** The container images used, when testcontainers provided the service. */
  images: { postgres?: string; redis?: string };
  /** Why the run did not use the Docker engine that answered (unset when it did, or none answered). */
  dockerFallback?: string;
  /**
   * Set when both containers were asked to join a Docker network of their own (option `network`):
   * its name and the URLs containers on it use (the admin URL's database is the same).
   */
  network?: { name: string; postgresUrl: string; redisUrl: string };
}

export type ServiceSource = 'env' | 'testcontainers' | 'localhost';

const LOCAL_POSTGRES = 'postgres://postgres@127.0.0.1:5432/postgres';
const LOCAL_REDIS = 'redis://127.0.0.1:6379';

/** Images built here by scripts/docker-images.sh; preferred when the engine already has them. */
export const LOCAL_IMAGES = { postgres: 'tollgate/postgres:local', redis: 'tollgate/redis:local' };
export const PUBLIC_IMAGES = { postgres: 'postgres:17-alpine', redis: 'redis:7-alpine' };

const HOW_TO_PROVIDE = [
  'Tests need a real Postgres and Redis. Provide them in one of these ways:',
  '  - set TEST_DATABASE_URL (a Postgres URL whose user may CREATE DATABASE) and TEST_REDIS_URL;',
  `  - run a Docker engine that has (or can pull) ${LOCAL_IMAGES.postgres} / ${PUBLIC_IMAGES.postgres} and ${LOCAL_IMAGES.redis} / ${PUBLIC_IMAGES.redis}`,
  '    (TEST_POSTGRES_IMAGE / TEST_REDIS_IMAGE name others; scripts/docker-images.sh builds the local ones);',
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
  // The refusal is reported by connect(); the event would only repeat it as noise.
  redis.on('error', () => {});
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

interface Started {
  url: string;
  /** The URL for other containers on the network, when started on one. */
  networkUrl?: string;
  stop(): Promise<unknown>;
}

/** A Docker network the containers join under the aliases `postgres` and `redis`. */
interface JoinedNetwork {
  name: string;
}

/** How containers are started; replaced in tests by starters that fail like an offline engine. */
export interface ContainerStarters {
  postgres(image: string, network?: JoinedNetwork): Promise<Started>;
  redis(image: string, network?: JoinedNetwork): Promise<Started>;
  /** Creates the network for `network: true`; absent means the engine cannot. */
  network?(): Promise<JoinedNetwork & { stop(): Promise<unknown> }>;
}

const testcontainersStarters: ContainerStarters = {
  async postgres(image, network) {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    let definition = new PostgreSqlContainer(image);
    if (network) definition = definition.withNetworkMode(network.name).withNetworkAliases('postgres');
    const container = await definition.start();
    const credentials = `${container.getUsername()}:${container.getPassword()}`;
    return {
      url: container.getConnectionUri(),
      ...(network
        ? { networkUrl: `postgres://${credentials}@postgres:5432/${container.getDatabase()}` }
        : {}),
      stop: () => container.stop(),
    };
  },
  async redis(image, network) {
    const { RedisContainer } = await import('@testcontainers/redis');
    let definition = new RedisContainer(image);
    if (network) definition = definition.withNetworkMode(network.name).withNetworkAliases('redis');
    const container = await definition.start();
    return {
      url: container.getConnectionUrl(),
      ...(network ? { networkUrl: 'redis://redis:6379' } : {}),
      stop: () => container.stop(),
    };
  },
  async network() {
    const { Network } = await import('testcontainers');
    const network = await new Network().start();
    return { name: network.getName(), stop: () => network.stop() };
  },
};

async function pickImage(
  engine: DockerEngine,
  service: 'postgres' | 'redis',
  configured: string | undefined,
): Promise<string> {
  if (configured) return configured;
  return (await engine.hasImage(LOCAL_IMAGES[service])) ? LOCAL_IMAGES[service] : PUBLIC_IMAGES[service];
}

/** The first line of an error, without the noise a pull failure carries. */
function shortReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (message.split('\n')[0] ?? '').slice(0, 200);
}

export interface StartedServices extends TestServices {
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Overrides for tests: the engine probe and the container starters. */
  findEngine?: typeof findDockerEngine;
  starters?: ContainerStarters;
  /** Where the one-line fallback notice goes. */
  notice?: (line: string) => void;
  /**
   * Put the Postgres and Redis containers on a Docker network of their own, so that services
   * under test started as containers reach them (TOLLGATE_E2E_IMAGES=1). Ignored on 127.0.0.1.
   */
  network?: boolean;
}

/**
 * Finds Postgres and Redis for a test run: TEST_DATABASE_URL / TEST_REDIS_URL if set; else
 * testcontainers when a Docker engine answers (local images first); else 127.0.0.1. An engine that
 * answers but cannot provide the images (offline, no registry) falls back to 127.0.0.1 with a
 * notice. Fails (never skips) when nothing answers.
 */
export async function startTestServices(
  env: Record<string, string | undefined> = process.env,
  options: StartOptions = {},
): Promise<StartedServices> {
  const starters = options.starters ?? testcontainersStarters;
  const notice = options.notice ?? ((line: string) => console.warn(line));
  const stops: Array<() => Promise<unknown>> = [];
  let joined: (JoinedNetwork & { stop(): Promise<unknown> }) | undefined;
  // The containers first: a network is removed only once no container is on it.
  const stopAll = async () => {
    await Promise.all(stops.splice(0).map((stop) => stop().catch(() => {})));
    await joined?.stop().catch(() => {});
    joined = undefined;
  };
  const needContainers = !env.TEST_DATABASE_URL || !env.TEST_REDIS_URL;
  const engine = needContainers ? await (options.findEngine ?? findDockerEngine)(env) : undefined;

  let postgresUrl = env.TEST_DATABASE_URL ?? LOCAL_POSTGRES;
  let redisUrl = env.TEST_REDIS_URL ?? LOCAL_REDIS;
  let postgresSource: ServiceSource = env.TEST_DATABASE_URL ? 'env' : 'localhost';
  let redisSource: ServiceSource = env.TEST_REDIS_URL ? 'env' : 'localhost';
  let dockerFallback: string | undefined;
  let images: TestServices['images'] = {};
  const networkUrls: { postgres?: string; redis?: string } = {};

  if (engine) {
    // testcontainers' reaper (Ryuk) is one more image to pull; without a registry it cannot come,
    // and the harness stops its containers itself. An image named in RYUK_CONTAINER_IMAGE is used.
    const reaper = env.RYUK_CONTAINER_IMAGE ?? 'testcontainers/ryuk:0.14.0';
    if (!env.TESTCONTAINERS_RYUK_DISABLED && !(await engine.hasImage(reaper))) {
      process.env.TESTCONTAINERS_RYUK_DISABLED = 'true';
    }
    try {
      // Both containers or neither: services on the network need the two of them.
      if (options.network && starters.network && !env.TEST_DATABASE_URL && !env.TEST_REDIS_URL) {
        joined = await starters.network().catch((error: unknown) => {
          throw new Error(`could not create a network: ${shortReason(error)}`);
        });
      }
      if (!env.TEST_DATABASE_URL) {
        const image = await pickImage(engine, 'postgres', env.TEST_POSTGRES_IMAGE);
        const started = await starters.postgres(image, joined).catch((error: unknown) => {
          throw new Error(`could not start ${image}: ${shortReason(error)}`);
        });
        stops.push(started.stop);
        postgresUrl = started.url;
        networkUrls.postgres = started.networkUrl;
        postgresSource = 'testcontainers';
        images.postgres = image;
      }
      if (!env.TEST_REDIS_URL) {
        const image = await pickImage(engine, 'redis', env.TEST_REDIS_IMAGE);
        const started = await starters.redis(image, joined).catch((error: unknown) => {
          throw new Error(`could not start ${image}: ${shortReason(error)}`);
        });
        stops.push(started.stop);
        redisUrl = started.url;
        networkUrls.redis = started.networkUrl;
        redisSource = 'testcontainers';
        images.redis = image;
      }
    } catch (error) {
      // Half a container setup is no use: drop it and take the 127.0.0.1 path for both.
      await stopAll();
      dockerFallback = shortReason(error);
      images = {};
      postgresUrl = env.TEST_DATABASE_URL ?? LOCAL_POSTGRES;
      redisUrl = env.TEST_REDIS_URL ?? LOCAL_REDIS;
      postgresSource = env.TEST_DATABASE_URL ? 'env' : 'localhost';
      redisSource = env.TEST_REDIS_URL ? 'env' : 'localhost';
      notice(`test services: a Docker engine answers but ${dockerFallback}; using 127.0.0.1 instead`);
    }
  }

  const [postgresOk, redisOk] = await Promise.all([postgresAnswers(postgresUrl), redisAnswers(redisUrl)]);
  if (!postgresOk || !redisOk) {
    await stopAll();
    const missing = [
      postgresOk
        ? null
        : `Postgres (${postgresSource}${postgresSource === 'env' ? ': TEST_DATABASE_URL' : ''}) did not answer`,
      redisOk
        ? null
        : `Redis (${redisSource}${redisSource === 'env' ? ': TEST_REDIS_URL' : ''}) did not answer`,
    ].filter(Boolean);
    const because = dockerFallback ? ` (Docker engine not used: ${dockerFallback})` : '';
    throw new Error(`${missing.join('; ')}${because}.\n${HOW_TO_PROVIDE}`);
  }

  return {
    postgresUrl,
    redisUrl,
    sources: { postgres: postgresSource, redis: redisSource },
    images,
    ...(dockerFallback ? { dockerFallback } : {}),
    ...(joined && networkUrls.postgres && networkUrls.redis
      ? { network: { name: joined.name, postgresUrl: networkUrls.postgres, redisUrl: networkUrls.redis } }
      : {}),
    async stop() {
      await stopAll();
    },
  };
}
