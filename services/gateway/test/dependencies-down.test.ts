import { connect, createServer, type Server, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { apiKeyDigest } from '@tollgate/schemas';
import { createLogger } from '@tollgate/service-kit';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { type RunningGateway, startGateway } from '../src/server.ts';
import { bodyFor, type Reply, uniqueTag, useStack } from './support.ts';

const t = useStack('gw-dependencies-down');
const CREDITS = 1_000_000n;
const extraGateways: RunningGateway[] = [];

afterAll(async () => {
  for (const gateway of extraGateways) await gateway.close();
});

/** A port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Another gateway like the stack's, with some settings changed; its logs join the stack's. */
async function startExtraGateway(env: Record<string, string>): Promise<RunningGateway> {
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      t.stack.gatewayLogs.push(String(chunk));
      callback();
    },
  });
  const config = loadConfig({ ...t.stack.gateways[0]!.deps.config.env, ...env });
  const gateway = await startGateway(config, {
    logger: createLogger({ name: 'gateway', level: 'debug', destination }),
  });
  extraGateways.push(gateway);
  return gateway;
}

/** A TCP relay to the control plane's internal API that can be cut, as a network failure would. */
async function startCuttableRelay(target: URL): Promise<{ url: string; cut(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    cut: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

/** Every kind of request a key can make, against one gateway. */
async function everyEndpoint(baseUrl: string, secret: string): Promise<Reply[]> {
  const replies: Reply[] = [];
  for (const [path, alias] of [
    ['/v1/messages', 'claude-test'],
    ['/v1/messages/count_tokens', 'claude-test'],
    ['/v1/chat/completions', 'gpt-test'],
    ['/v1/responses', 'gpt-test'],
  ]) {
    replies.push(await t.post(path!, secret, bodyFor(path!, alias!), { baseUrl }));
  }
  replies.push(await t.get('/v1/models', secret, { baseUrl }));
  replies.push(await t.get('/v1/key/status', secret, { baseUrl }));
  return replies;
}

describe('Redis unreachable', () => {
  it('refuses every authenticated call with rate_limiter_unavailable and meters nothing', async () => {
    const gateway = await startExtraGateway({ REDIS_URL: `redis://127.0.0.1:${await closedPort()}` });
    const key = await t.key({ credits: CREDITS });
    const calls = t.upstreamCalls();
    for (const reply of await everyEndpoint(gateway.server.url, key.secret)) {
      t.expectError(reply, 503, 'rate_limiter_unavailable');
    }
    expect(t.upstreamCalls()).toBe(calls);
    await gateway.drainBilling(5_000);
    await t.expectUntouched(key, { credits: CREDITS });
  });
});

describe('control plane unreachable', () => {
  it('refuses every authenticated call with billing_unavailable when the gateway cannot reach it at all', async () => {
    const gateway = await startExtraGateway({
      CONTROL_PLANE_INTERNAL_URL: `http://127.0.0.1:${await closedPort()}`,
    });
    const key = await t.key({ credits: CREDITS });
    const calls = t.upstreamCalls();
    for (const reply of await everyEndpoint(gateway.server.url, key.secret)) {
      t.expectError(reply, 503, 'billing_unavailable');
    }
    expect(t.upstreamCalls()).toBe(calls);
    await t.expectUntouched(key, { credits: CREDITS });
  });

  it('refuses with billing_unavailable when the control plane goes away after the key was cached; nothing spent', async () => {
    const relay = await startCuttableRelay(new URL(t.stack.controlPlane.internalServer.url));
    const gateway = await startExtraGateway({ CONTROL_PLANE_INTERNAL_URL: relay.url });
    const key = await t.key({ credits: CREDITS });
    // The key must be cached once the control plane is cut: its setup's events must not land later.
    await t.stack.eventsDelivered([gateway]);

    const tag = uniqueTag('before');
    const first = await t.post(
      '/v1/chat/completions',
      key.secret,
      bodyFor('/v1/chat/completions', 'gpt-test', `tag=${tag},input_tokens=10,output_tokens=10`),
      { baseUrl: gateway.server.url },
    );
    expect(first.status, first.text).toBe(200);
    expect(await gateway.drainBilling(5_000)).toBe(true);
    const spent = 10n * 2n + 10n * 8n;
    const before = await t.stack.balances(key.accountId);
    expect(before).toMatchObject({ credits: CREDITS - spent, reservedCredits: 0n });
    expect(gateway.deps.keys.peek(apiKeyDigest(key.secret))?.keyId).toBe(key.keyId);

    await relay.cut();
    const calls = t.upstreamCalls();
    for (const reply of await everyEndpoint(gateway.server.url, key.secret)) {
      t.expectError(reply, 503, 'billing_unavailable');
    }
    expect(t.upstreamCalls()).toBe(calls);
    // The operator's log says why; the client's body only names the code.
    const line = await t.waitForLog((text) => text.includes('reservation failed: billing unavailable'));
    expect(JSON.parse(line)).toMatchObject({ level: 40, keyId: key.keyId, reason: 'ECONNREFUSED' });
    expect(await t.stack.balances(key.accountId)).toEqual(before);
    expect((await t.stack.reservations(key.accountId)).map((row) => row.status)).toEqual(['settled']);
  });
});
