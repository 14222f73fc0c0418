import { createWriteStream } from 'node:fs';
import path from 'node:path';
import type { StartedTestContainer } from 'testcontainers';
import { findDockerEngine } from './docker-engine.ts';
import type { TestServices } from './services.ts';

/** The service images scripts/docker-images.sh builds; the e2e images path runs these. */
export const SERVICE_IMAGES = {
  gateway: 'tollgate/gateway:local',
  controlPlane: 'tollgate/control-plane:local',
  mockUpstream: 'tollgate/mock-upstream:local',
};

/**
 * How the e2e stacks run the services under test: as processes (`node src/main.ts`, the default),
 * or as containers of the built images on the Docker network of the Postgres and Redis containers.
 */
export type ServicesUnderTest =
  | { mode: 'processes'; reason?: string }
  | {
      mode: 'images';
      network: string;
      /** Admin URL of Postgres and the Redis URL, as containers on the network reach them. */
      postgresUrl: string;
      redisUrl: string;
      images: typeof SERVICE_IMAGES;
    };

/**
 * The images path needs the opt-in (TOLLGATE_E2E_IMAGES=1), Postgres and Redis as containers on a
 * network, and the three service images in the engine; otherwise processes, saying why.
 */
export async function chooseServicesUnderTest(
  env: Record<string, string | undefined>,
  services: Pick<TestServices, 'network' | 'dockerFallback'>,
  findEngine = findDockerEngine,
): Promise<ServicesUnderTest> {
  if (env.TOLLGATE_E2E_IMAGES !== '1') return { mode: 'processes' };
  if (!services.network) {
    const why =
      services.dockerFallback ?? 'no Docker engine answers, or TEST_DATABASE_URL / TEST_REDIS_URL is set';
    return { mode: 'processes', reason: `Postgres and Redis are not containers on a network (${why})` };
  }
  const engine = await findEngine(env);
  const missing = [];
  for (const image of Object.values(SERVICE_IMAGES)) {
    if (!(await engine?.hasImage(image))) missing.push(image);
  }
  if (missing.length > 0) {
    return {
      mode: 'processes',
      reason: `missing ${missing.join(', ')} (bash scripts/docker-images.sh builds them)`,
    };
  }
  return { mode: 'images', ...services.network, network: services.network.name, images: SERVICE_IMAGES };
}

/** The run's one line on where the services under test come from. */
export function describeServicesUnderTest(choice: ServicesUnderTest): string {
  if (choice.mode === 'images') {
    return `services under test: images (${Object.values(choice.images).join(', ')}) on network ${choice.network}`;
  }
  return `services under test: processes (node src/main.ts)${choice.reason ? `; TOLLGATE_E2E_IMAGES=1 but ${choice.reason}` : ''}`;
}

export interface ServiceContainer {
  name: string;
  container: StartedTestContainer;
  /** The service's port as the host reaches it (a published port on the engine's host). */
  url(port: number): string;
  logFile: string;
  /** `docker stop`: SIGTERM through tini to Node, which shuts down gracefully. */
  stop(): Promise<void>;
}

export interface ServiceContainerOptions {
  name: string;
  image: string;
  network: string;
  /** The name the other containers on the network reach it by. */
  alias: string;
  env: Record<string, string>;
  /** Ports to publish, each with the health path that must answer 2xx before the start resolves. */
  health: Array<{ port: number; path: string }>;
  files?: Array<{ content: string; target: string }>;
  /** Where `<name>.log` gets the container's output. */
  logDir: string;
}

/**
 * Starts one service from its image through testcontainers, on the given network, and waits until
 * its health endpoints answer. On failure the error carries the tail of the container's output.
 */
export async function startServiceContainer(options: ServiceContainerOptions): Promise<ServiceContainer> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const logFile = path.join(options.logDir, `${options.name}.log`);
  const log = createWriteStream(logFile, { flags: 'a' });
  const output: string[] = [];
  let definition = new GenericContainer(options.image)
    .withNetworkMode(options.network)
    .withNetworkAliases(options.alias)
    .withEnvironment(options.env)
    .withExposedPorts(...options.health.map((check) => check.port))
    .withWaitStrategy(
      Wait.forAll(
        options.health.map((check) =>
          Wait.forHttp(check.path, check.port).forStatusCodeMatching((s) => s < 300),
        ),
      ),
    )
    .withStartupTimeout(60_000)
    .withLogConsumer((stream) => {
      stream.on('data', (chunk: Buffer | string) => {
        output.push(String(chunk));
        if (output.length > 40) output.shift();
      });
      stream.pipe(log);
    });
  if (options.files) definition = definition.withCopyContentToContainer(options.files);
  let container: StartedTestContainer;
  try {
    container = await definition.start();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      `${options.name} (${options.image}) did not become healthy: ${reason}\n${output.join('').trimEnd()}`,
    );
  }
  return {
    name: options.name,
    container,
    logFile,
    url: (port) => `http://${container.getHost()}:${container.getMappedPort(port)}`,
    async stop() {
      await container.stop({ timeout: 10_000 });
    },
  };
}
