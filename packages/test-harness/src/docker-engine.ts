import { existsSync } from 'node:fs';
import { request } from 'node:http';

/** Where the Docker engine's API listens: a unix socket path, or a tcp engine left to testcontainers. */
function engineSocket(env: Record<string, string | undefined>): { socketPath?: string; remote: boolean } {
  const host = env.DOCKER_HOST;
  if (!host) return { socketPath: '/var/run/docker.sock', remote: false };
  if (host.startsWith('unix://')) return { socketPath: host.slice('unix://'.length), remote: false };
  return { remote: true };
}

/** One GET on the engine's API; the status code, or undefined when the engine does not answer. */
function engineGet(socketPath: string, path: string): Promise<number | undefined> {
  return new Promise((resolve) => {
    const probe = request({ socketPath, path, timeout: 2_000 }, (response) => {
      response.resume();
      resolve(response.statusCode);
    });
    probe.on('error', () => resolve(undefined));
    probe.on('timeout', () => {
      probe.destroy();
      resolve(undefined);
    });
    probe.end();
  });
}

export interface DockerEngine {
  /** Whether the image is already in the engine (no pull needed). */
  hasImage(image: string): Promise<boolean>;
}

/** The Docker engine, when its API answers /_ping; undefined otherwise. */
export async function findDockerEngine(
  env: Record<string, string | undefined> = process.env,
): Promise<DockerEngine | undefined> {
  const { socketPath, remote } = engineSocket(env);
  // tcp:// engines: let testcontainers try; it reports what it cannot pull.
  if (remote) return { hasImage: async () => false };
  if (!socketPath || !existsSync(socketPath)) return undefined;
  if ((await engineGet(socketPath, '/_ping')) !== 200) return undefined;
  return {
    hasImage: async (image) =>
      (await engineGet(socketPath, `/images/${encodeURIComponent(image)}/json`)) === 200,
  };
}
