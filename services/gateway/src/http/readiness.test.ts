import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@tollgate/service-kit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { GatewayDependencies } from '../deps.ts';
import { createGatewayApp } from './app.ts';
import { createReadiness, type Readiness } from './readiness.ts';

const logger = createLogger({ name: 'readiness-test', level: 'silent' });
let controlPlane: Server;
let controlPlaneUrl: string;
let healthy = true;

beforeAll(async () => {
  // Stands in for the control plane's internal API: only its health answer matters here.
  controlPlane = createServer((request, response) => {
    response.statusCode = request.url === '/internal/health' && healthy ? 200 : 503;
    response.end('{}');
  });
  controlPlane.listen(0, '127.0.0.1');
  await once(controlPlane, 'listening');
  controlPlaneUrl = `http://127.0.0.1:${(controlPlane.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => controlPlane.close(resolve)));

async function probe(readiness: Readiness) {
  const app = createGatewayApp({} as GatewayDependencies, { readiness });
  const live = await app.request('/livez');
  const ready = await app.request('/readyz');
  return { live: live.status, ready: ready.status, body: await ready.json() };
}

describe('gateway /livez and /readyz', () => {
  it('is ready while the control plane and Redis answer', async () => {
    const readiness = createReadiness({ controlPlaneUrl, redisUrl: inject('testServices').redisUrl, logger });
    try {
      expect(await probe(readiness)).toEqual({
        live: 200,
        ready: 200,
        body: { status: 'ready', checks: { controlPlane: 'ok', redis: 'ok' } },
      });
    } finally {
      await readiness.close();
    }
  });

  it('is live but not ready while Redis does not answer', async () => {
    const readiness = createReadiness({
      controlPlaneUrl,
      redisUrl: 'redis://127.0.0.1:1',
      logger,
      timeoutMs: 500,
    });
    try {
      expect(await probe(readiness)).toEqual({
        live: 200,
        ready: 503,
        body: { status: 'not_ready', checks: { controlPlane: 'ok', redis: 'failing' } },
      });
    } finally {
      await readiness.close();
    }
  });

  it('is live but not ready while the control plane does not answer, and ready again after', async () => {
    const readiness = createReadiness({ controlPlaneUrl, redisUrl: undefined, logger });
    try {
      healthy = false;
      expect(await probe(readiness)).toMatchObject({
        live: 200,
        ready: 503,
        body: { checks: { controlPlane: 'failing' } },
      });
      healthy = true;
      // Real time: past the probe cache (one second).
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      expect(await probe(readiness)).toMatchObject({ ready: 200, body: { status: 'ready' } });
    } finally {
      healthy = true;
      await readiness.close();
    }
  });
});
