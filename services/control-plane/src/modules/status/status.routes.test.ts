import { randomUUID } from 'node:crypto';
import type { GatewayHeartbeat } from '@tollgate/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { internalApi, seedCatalog } from '../../../test/billing.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { sampleOnce } from './status.service.ts';

interface Component {
  name: string;
  kind: string;
  status: string;
  detail: string;
  history: { day: string; status: string; samples: number; operational: number }[];
}
interface StatusBody {
  data: { status: string; gatewayUrl: string; components: Component[] };
}

let context: TestContext;
beforeAll(async () => {
  context = await createTestContext('status', {
    STATUS_GATEWAY_STALE_SECONDS: '30',
    STATUS_PROVIDER_WINDOW_MINUTES: '5',
    STATUS_HISTORY_DAYS: '7',
    GATEWAY_PUBLIC_URL: 'https://gateway.example.test/',
  });
  await seedCatalog(context);
});
afterAll(() => context.close());

async function readStatus(): Promise<StatusBody['data']> {
  const response = await context.publicApp.request('/api/v1/status');
  expect(response.status).toBe(200);
  return ((await response.json()) as StatusBody).data;
}

function component(status: StatusBody['data'], name: string): Component {
  const found = status.components.find((item) => item.name === name);
  if (!found) throw new Error(`no component ${name} in ${JSON.stringify(status.components)}`);
  return found;
}

function beat(gatewayId: string, providers: GatewayHeartbeat['providers'] = []): GatewayHeartbeat {
  return { gatewayId, startedAt: new Date().toISOString(), redis: 'ok', providers };
}

describe('GET /api/v1/status', () => {
  it('does not say operational while no gateway has reported', async () => {
    const status = await readStatus();
    expect(status.status).toBe('down');
    expect(component(status, 'gateway')).toMatchObject({ status: 'down' });
    expect(component(status, 'control-plane').status).toBe('operational');
    expect(component(status, 'database').status).toBe('operational');
    expect(component(status, 'redis').status).toBe('unknown');
    // Every published model is listed; no provider, upstream model or address is.
    expect(status.components.filter((item) => item.kind === 'model').map((item) => item.name)).toEqual([
      'model:priced',
      'model:tokens-only',
    ]);
    const text = JSON.stringify(status);
    for (const hidden of [
      'up-anthropic',
      'up-openai',
      'provider',
      'secret-upstream',
      'hidden',
      '127.0.0.1:9',
    ]) {
      expect(text).not.toContain(hidden);
    }
    expect(status.gatewayUrl).toBe('https://gateway.example.test');
  });

  it('is operational while a gateway beats, and down again once its heartbeats stop', async () => {
    const api = internalApi(context);
    const answer = await api.call('/status/heartbeat', beat(randomUUID()));
    expect(answer).toEqual({ status: 200, body: { accepted: true } });
    let status = await readStatus();
    expect(component(status, 'gateway')).toMatchObject({
      status: 'operational',
      detail: 'Answering requests.',
    });
    expect(component(status, 'redis').status).toBe('operational');
    expect(status.status).toBe('operational');

    context.clock.advance(31_000);
    status = await readStatus();
    expect(component(status, 'gateway').status).toBe('down');
    expect(status.status).toBe('down');
  });

  it('shows a model down when every recent call to its provider failed, degraded when many did, never the counts', async () => {
    const api = internalApi(context);
    const gatewayId = randomUUID();
    await api.call(
      '/status/heartbeat',
      beat(gatewayId, [
        { providerId: 'up-openai', successes: 0, failures: 4 },
        { providerId: 'up-anthropic', successes: 6, failures: 3 },
      ]),
    );
    const status = await readStatus();
    expect(component(status, 'model:priced')).toMatchObject({ status: 'down', detail: 'Calls are failing.' });
    expect(component(status, 'model:tokens-only')).toMatchObject({
      status: 'degraded',
      detail: 'Some calls are failing.',
    });
    expect(status.status).toBe('degraded');
    expect(JSON.stringify(status)).not.toMatch(/\b[0-9]+ of [0-9]+\b/);

    // Outcomes older than the window no longer count.
    context.clock.advance(6 * 60_000);
    await api.call(
      '/status/heartbeat',
      beat(gatewayId, [{ providerId: 'up-openai', successes: 9, failures: 0 }]),
    );
    const later = await readStatus();
    expect(component(later, 'model:priced')).toMatchObject({
      status: 'operational',
      detail: 'Answering normally.',
    });
    expect(component(later, 'model:tokens-only')).toMatchObject({ status: 'operational' });
  });

  it("shows a model degraded while its provider's breaker is open, naming no provider", async () => {
    const api = internalApi(context);
    const now = context.clock.now().getTime();
    await api.call('/status/heartbeat', {
      ...beat(randomUUID(), [{ providerId: 'up-anthropic', successes: 5, failures: 0 }]),
      upstreamBreakers: [
        {
          providerId: 'up-anthropic',
          upstreamModel: 'a-model',
          state: 'open',
          reason: 'error_rate',
          cause: 'upstream_unavailable (500)',
          trips: 1,
          failures: 6,
          calls: 10,
          changedAt: new Date(now).toISOString(),
          openUntil: new Date(now + 10_000).toISOString(),
          benchedUntil: null,
        },
      ],
    });
    const status = await readStatus();
    expect(component(status, 'model:tokens-only')).toMatchObject({
      status: 'degraded',
      detail: 'Some calls are failing.',
    });
    expect(JSON.stringify(status)).not.toMatch(/up-anthropic|a-model|error_rate/);
  });

  it('reports Redis down when every gateway fails to reach it', async () => {
    const api = internalApi(context);
    context.clock.advance(60_000);
    await api.call('/status/heartbeat', { ...beat(randomUUID()), redis: 'failing' });
    const status = await readStatus();
    expect(component(status, 'redis').status).toBe('down');
    expect(status.status).toBe('degraded');
  });

  it('keeps a daily history from stored samples', async () => {
    await sampleOnce(context.deps);
    const status = await readStatus();
    const gateway = component(status, 'gateway');
    expect(gateway.history).toHaveLength(7);
    const today = gateway.history.at(-1);
    expect(today?.samples).toBeGreaterThanOrEqual(1);
    expect(today?.status).toBe('operational');
    expect(component(status, 'redis').history.at(-1)?.status).toBe('down');
    expect(gateway.history[0]).toMatchObject({ status: 'unknown', samples: 0 });
    // A model's history is its provider's, sampled under a name the public never sees.
    expect(component(status, 'model:priced').history.at(-1)).toMatchObject({ status: 'operational' });
    expect(component(status, 'model:priced').history.at(-1)?.samples).toBeGreaterThanOrEqual(1);
    expect(JSON.stringify(status)).not.toContain('provider');
  });

  it('refuses a heartbeat without a service token or with a malformed body', async () => {
    const anonymous = await context.internalApp.request('/internal/v1/status/heartbeat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(beat(randomUUID())),
    });
    expect(anonymous.status).toBe(401);
    const malformed = await internalApi(context).call<{ code: string }>('/status/heartbeat', {
      gatewayId: 'not-a-uuid',
      providers: [],
    });
    expect(malformed.status).toBe(422);
    expect(malformed.body.code).toBe('validation_failed');
  });
});

describe('the dashboard pages', () => {
  it('serve the app with security headers on every page path, and leave /api to the API', async () => {
    for (const path of ['/', '/status', '/keys']) {
      const response = await context.publicApp.request(path);
      expect(response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(response.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(response.headers.get('content-security-policy')).not.toContain('unsafe-inline');
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('referrer-policy')).toBe('no-referrer');
      expect(response.headers.get('content-type')).toMatch(/text\/html/);
    }
    const api = await context.publicApp.request('/api/v1/no-such-route');
    expect(api.status).toBe(404);
    expect(await api.json()).toEqual({ message: 'Not found.', code: 'not_found' });
    expect(api.headers.get('x-content-type-options')).toBe('nosniff');
  });
});
