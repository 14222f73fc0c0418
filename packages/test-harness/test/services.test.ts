import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chooseServicesUnderTest, describeServicesUnderTest, SERVICE_IMAGES } from '../src/containers.ts';
import { findDockerEngine } from '../src/docker-engine.ts';
import { type ContainerStarters, LOCAL_IMAGES, PUBLIC_IMAGES, startTestServices } from '../src/services.ts';

// The 127.0.0.1 services this machine runs; env {} below means "nothing configured".
const localEnv = {};

/** A Docker engine API on a unix socket that answers /_ping and knows only the given images. */
async function fakeEngine(images: string[]) {
  const dir = mkdtempSync(path.join(tmpdir(), 'fake-docker-'));
  const socketPath = path.join(dir, 'docker.sock');
  const server = createServer((request, response) => {
    const url = decodeURIComponent(request.url ?? '');
    if (url === '/_ping') return response.end('OK');
    const image = /^\/images\/(.+)\/json$/.exec(url)?.[1];
    response.statusCode = image && images.includes(image) ? 200 : 404;
    response.end('{}');
  });
  server.listen(socketPath);
  await once(server, 'listening');
  return {
    env: { DOCKER_HOST: `unix://${socketPath}` },
    async close() {
      await new Promise((resolve) => server.close(resolve));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Starters that fail the way testcontainers does on an engine that cannot reach a registry. */
function offlineStarters(calls: string[]): ContainerStarters {
  const fail = async (image: string): Promise<never> => {
    calls.push(image);
    throw new Error(`(HTTP code 404) no such image - pull access denied for ${image}\n  at stack line`);
  };
  return { postgres: fail, redis: fail };
}

describe('startTestServices', () => {
  let offline: Awaited<ReturnType<typeof fakeEngine>>;
  beforeAll(async () => {
    offline = await fakeEngine([]);
  });
  afterAll(() => offline.close());

  it('finds a Docker engine by its ping, and the images it already has', async () => {
    const engine = await fakeEngine([LOCAL_IMAGES.postgres]);
    try {
      const found = await findDockerEngine(engine.env);
      expect(found).toBeDefined();
      expect(await found?.hasImage(LOCAL_IMAGES.postgres)).toBe(true);
      expect(await found?.hasImage(PUBLIC_IMAGES.postgres)).toBe(false);
    } finally {
      await engine.close();
    }
    expect(await findDockerEngine({ DOCKER_HOST: 'unix:///nonexistent/docker.sock' })).toBeUndefined();
  });

  it('falls back to 127.0.0.1 with one notice when the engine answers but cannot provide images', async () => {
    const calls: string[] = [];
    const notices: string[] = [];
    const services = await startTestServices(
      { ...localEnv, ...offline.env },
      { starters: offlineStarters(calls), notice: (line) => notices.push(line) },
    );
    try {
      expect(services.sources).toEqual({ postgres: 'localhost', redis: 'localhost' });
      expect(services.postgresUrl).toBe('postgres://postgres@127.0.0.1:5432/postgres');
      expect(services.images).toEqual({});
      expect(calls).toEqual([PUBLIC_IMAGES.postgres]);
      expect(notices).toHaveLength(1);
      expect(notices[0]).toContain(`could not start ${PUBLIC_IMAGES.postgres}`);
      expect(notices[0]).toContain('using 127.0.0.1');
      expect(notices[0]).not.toContain('\n');
    } finally {
      await services.stop();
    }
  });

  it('uses the locally built images when the engine has them, and stops what it started', async () => {
    const engine = await fakeEngine([LOCAL_IMAGES.postgres, LOCAL_IMAGES.redis]);
    const started: string[] = [];
    const stopped: string[] = [];
    const starter = (url: string) => async (image: string) => {
      started.push(image);
      return { url, stop: async () => stopped.push(image) };
    };
    try {
      const services = await startTestServices(engine.env, {
        starters: {
          postgres: starter('postgres://postgres@127.0.0.1:5432/postgres'),
          redis: starter('redis://127.0.0.1:6379'),
        },
      });
      expect(services.sources).toEqual({ postgres: 'testcontainers', redis: 'testcontainers' });
      expect(services.images).toEqual(LOCAL_IMAGES);
      await services.stop();
      expect(started).toEqual([LOCAL_IMAGES.postgres, LOCAL_IMAGES.redis]);
      expect(stopped.sort()).toEqual([LOCAL_IMAGES.postgres, LOCAL_IMAGES.redis].sort());
    } finally {
      await engine.close();
    }
  });

  it('names TEST_DATABASE_URL and TEST_REDIS_URL when nothing answers', async () => {
    const attempt = startTestServices(
      {
        TEST_DATABASE_URL: 'postgres://postgres@127.0.0.1:1/postgres',
        TEST_REDIS_URL: 'redis://127.0.0.1:1',
      },
      { findEngine: async () => undefined },
    );
    await expect(attempt).rejects.toThrow(/TEST_DATABASE_URL\).*TEST_REDIS_URL\)/s);
    await expect(attempt).rejects.toThrow(/set TEST_DATABASE_URL .* and TEST_REDIS_URL/);
  });

  it('reports why the engine was not used when the fallback finds nothing either', async () => {
    const attempt = startTestServices(
      { ...offline.env, TEST_REDIS_URL: 'redis://127.0.0.1:1' },
      { starters: offlineStarters([]), notice: () => {} },
    );
    await expect(attempt).rejects.toThrow(/Docker engine not used: could not start/);
  });

  it('puts both containers on a network of their own when asked, and removes it after them', async () => {
    const engine = await fakeEngine([LOCAL_IMAGES.postgres, LOCAL_IMAGES.redis]);
    const events: string[] = [];
    const starter =
      (url: string, networkUrl: string) => async (image: string, network?: { name: string }) => {
        events.push(`start ${image} on ${network?.name}`);
        return { url, networkUrl, stop: async () => events.push(`stop ${image}`) };
      };
    try {
      const services = await startTestServices(engine.env, {
        network: true,
        starters: {
          postgres: starter(
            'postgres://postgres@127.0.0.1:5432/postgres',
            'postgres://u:p@postgres:5432/test',
          ),
          redis: starter('redis://127.0.0.1:6379', 'redis://redis:6379'),
          network: async () => {
            events.push('create net-1');
            return { name: 'net-1', stop: async () => events.push('remove net-1') };
          },
        },
      });
      expect(services.network).toEqual({
        name: 'net-1',
        postgresUrl: 'postgres://u:p@postgres:5432/test',
        redisUrl: 'redis://redis:6379',
      });
      await services.stop();
      expect(events[0]).toBe('create net-1');
      expect(events.slice(1, 3)).toEqual([
        `start ${LOCAL_IMAGES.postgres} on net-1`,
        `start ${LOCAL_IMAGES.redis} on net-1`,
      ]);
      expect(events.at(-1)).toBe('remove net-1');
      expect(events).toHaveLength(6);
    } finally {
      await engine.close();
    }
  });
});

describe('chooseServicesUnderTest', () => {
  const network = {
    name: 'net-1',
    postgresUrl: 'postgres://u:p@postgres:5432/test',
    redisUrl: 'redis://redis:6379',
  };

  it('stays with processes without the opt-in, and says nothing about images', async () => {
    const choice = await chooseServicesUnderTest({}, { network }, async () => {
      throw new Error('the engine must not be asked');
    });
    expect(choice).toEqual({ mode: 'processes' });
    expect(describeServicesUnderTest(choice)).toBe('services under test: processes (node src/main.ts)');
  });

  it('takes the images path with the opt-in, the network and all three images', async () => {
    const engine = await fakeEngine(Object.values(SERVICE_IMAGES));
    try {
      const choice = await chooseServicesUnderTest({ ...engine.env, TOLLGATE_E2E_IMAGES: '1' }, { network });
      expect(choice).toEqual({ mode: 'images', ...network, network: 'net-1', images: SERVICE_IMAGES });
      expect(describeServicesUnderTest(choice)).toContain(`images (${SERVICE_IMAGES.gateway}`);
    } finally {
      await engine.close();
    }
  });

  it('says why it stays with processes when an image is missing or there is no network', async () => {
    const engine = await fakeEngine([SERVICE_IMAGES.gateway, SERVICE_IMAGES.mockUpstream]);
    try {
      const env = { ...engine.env, TOLLGATE_E2E_IMAGES: '1' };
      const missing = await chooseServicesUnderTest(env, { network });
      expect(missing).toEqual({
        mode: 'processes',
        reason: `missing ${SERVICE_IMAGES.controlPlane} (bash scripts/docker-images.sh builds them)`,
      });
      const noNetwork = await chooseServicesUnderTest(env, { dockerFallback: 'could not start x' });
      expect(describeServicesUnderTest(noNetwork)).toBe(
        'services under test: processes (node src/main.ts); TOLLGATE_E2E_IMAGES=1 but Postgres and Redis are not containers on a network (could not start x)',
      );
    } finally {
      await engine.close();
    }
  });
});
