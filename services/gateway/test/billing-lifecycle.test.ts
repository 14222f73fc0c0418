import { mkdtemp } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createLogger } from '@tollgate/service-kit';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { type RunningGateway, startGateway } from '../src/server.ts';
import { bodyFor, type FundedKey, useStack } from './support.ts';

// A long finish interval: a settlement stays queued well past the answer unless something sends it.
const t = useStack('gw-billing-lifecycle', { gatewayEnv: { FINISH_FLUSH_MS: '1500' } });
const CREDITS = 10_000_000n;
const PRICES: Record<string, [bigint, bigint]> = { 'claude-test': [3n, 15n], 'gpt-test': [2n, 8n] };
const extraGateways: RunningGateway[] = [];

afterAll(async () => {
  for (const gateway of extraGateways) await gateway.close();
});

/** Waits until the account's only reservation has left `reserved`, and returns it. */
async function finishedReservation(key: FundedKey, gateway?: RunningGateway) {
  for (let attempt = 0; attempt < 200; attempt++) {
    if (gateway) await gateway.drainBilling(2_000);
    else await t.stack.settled();
    const rows = await t.stack.reservations(key.accountId);
    if (rows.length === 1 && rows[0]!.status !== 'reserved') return rows[0]!;
    // The gateway queues the finish only once it has seen the client leave, which it announces
    // nowhere: ask again until it has.
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the reservation was not finished');
}

/** Opens a streamed call, reads its first chunk, then hangs up. */
async function leaveAfterFirstChunk(path: string, secret: string, body: Record<string, unknown>) {
  const controller = new AbortController();
  const response = await fetch(`${t.stack.gatewayUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
    signal: controller.signal,
  });
  expect(response.status).toBe(200);
  const reader = response.body!.getReader();
  const first = await reader.read();
  expect(first.done).toBe(false);
  controller.abort();
  await reader.cancel().catch(() => {});
}

describe('a client that hangs up mid-stream', () => {
  it('is charged the usage the provider reports: the gateway reads the upstream on to its end', async () => {
    for (const [path, alias] of [
      ['/v1/messages', 'claude-test'],
      ['/v1/chat/completions', 'gpt-test'],
      ['/v1/responses', 'gpt-test'],
    ] as const) {
      const key = await t.key({ credits: CREDITS });
      await leaveAfterFirstChunk(
        path,
        key.secret,
        bodyFor(path, alias, 'words=12,chunk_delay=40,input_tokens=50,output_tokens=20'),
      );
      const row = await finishedReservation(key);
      const [input, output] = PRICES[alias]!;
      expect([row.status, row.outcome, row.http_status, row.charged_credits]).toEqual([
        'settled',
        'client_disconnected',
        499,
        50n * input + 20n * output,
      ]);
      expect(await t.stack.balances(key.accountId)).toMatchObject({
        credits: CREDITS - (50n * input + 20n * output),
        reservedCredits: 0n,
      });
    }
  });

  it('is held, never released, when the provider reports no usage by the end', async () => {
    const key = await t.key({ credits: CREDITS });
    await leaveAfterFirstChunk(
      '/v1/chat/completions',
      key.secret,
      bodyFor('/v1/chat/completions', 'gpt-test', 'words=8,chunk_delay=40,no_usage'),
    );
    const row = await finishedReservation(key);
    expect([row.status, row.outcome, row.http_status]).toEqual(['held', 'client_disconnected', 499]);
    expect((await t.stack.balances(key.accountId)).reservedCredits).toBe(row.reserved_credits);
  });
});

describe('near the end of a balance', () => {
  it('serves every call the balance covers, one after another, without a 402', async () => {
    const body = bodyFor('/v1/chat/completions', 'gpt-test', 'input_tokens=1,output_tokens=1', {
      max_tokens: 10,
    });
    // What one such call reserves, measured on a rich account.
    const probe = await t.key({ credits: CREDITS });
    expect((await t.post('/v1/chat/completions', probe.secret, body)).status).toBe(200);
    await t.stack.settled();
    const [measured] = await t.stack.reservations(probe.accountId);
    const reserve = measured!.reserved_credits;
    const cost = 2n + 8n;
    expect(reserve).toBeGreaterThan(cost * 3n);

    const calls = 4;
    const key = await t.key({ credits: BigInt(calls - 1) * cost + reserve });
    for (let call = 1; call <= calls; call++) {
      const reply = await t.post('/v1/chat/completions', key.secret, body);
      expect({ call, status: reply.status, text: reply.text }).toMatchObject({ call, status: 200 });
    }
    t.expectError(await t.post('/v1/chat/completions', key.secret, body), 402, 'insufficient_credits');
    await t.stack.settled();
    expect(await t.stack.balances(key.accountId)).toMatchObject({
      credits: reserve - cost,
      reservedCredits: 0n,
    });
  });
});

/**
 * A TCP relay to the control plane whose answers can be swallowed, as if lost on the way back,
 * or which can be cut, as a network failure would.
 */
async function startLossyRelay(
  target: URL,
): Promise<{ url: string; swallow(on: boolean): void; cut(): Promise<void> }> {
  let swallowing = false;
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
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      if (!swallowing) client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    swallow(on) {
      swallowing = on;
    },
    async cut() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

/** Another gateway like the stack's with some settings changed; its logs join the stack's. */
async function startExtraGateway(env: Record<string, string>): Promise<RunningGateway> {
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      t.stack.gatewayLogs.push(String(chunk));
      callback();
    },
  });
  const gateway = await startGateway(loadConfig({ ...t.stack.gateways[0]!.deps.config.env, ...env }), {
    logger: createLogger({ name: 'gateway', level: 'debug', destination }),
  });
  await gateway.deps.catalog.ready();
  return gateway;
}

describe('a reservation whose answer is lost', () => {
  it('is released by its id once the control plane is reachable again', async () => {
    const relay = await startLossyRelay(new URL(t.stack.controlPlane.internalServer.url));
    const gateway = await startExtraGateway({
      CONTROL_PLANE_INTERNAL_URL: relay.url,
      BILLING_TIMEOUT_MS: '400',
      FINISH_FLUSH_MS: '20',
    });
    extraGateways.push(gateway);
    const key = await t.key({ credits: CREDITS });
    // Resolve (and cache) the key first, so the only call whose answer is lost is the reserve.
    expect((await t.get('/v1/models', key.secret, { baseUrl: gateway.server.url })).status).toBe(200);

    relay.swallow(true);
    const started = Date.now();
    const reply = await t.post(
      '/v1/chat/completions',
      key.secret,
      bodyFor('/v1/chat/completions', 'gpt-test'),
      {
        baseUrl: gateway.server.url,
      },
    );
    t.expectError(reply, 503, 'billing_unavailable');
    expect(Date.now() - started).toBeLessThan(2_000);

    relay.swallow(false);
    const row = await finishedReservation(key, gateway);
    // It was committed (something was reserved), and the gateway's release gave it all back.
    expect(row.reserved_credits).toBeGreaterThan(0n);
    expect([row.status, row.charged_credits]).toEqual(['released', 0n]);
    expect(await t.stack.balances(key.accountId)).toMatchObject({ credits: CREDITS, reservedCredits: 0n });
  });
});

describe('a settlement the gateway cannot deliver before it stops', () => {
  it('is kept (in Redis, or in the data folder without Redis) and delivered by the next gateway', async () => {
    const folder = await mkdtemp(path.join(tmpdir(), 'tollgate-gw-data-'));
    const stores: Array<Record<string, string>> = [{}, { REDIS_URL: '', GATEWAY_DATA_DIR: folder }];
    for (const store of stores) {
      const relay = await startLossyRelay(new URL(t.stack.controlPlane.internalServer.url));
      // Settlements wait in its queue: nothing leaves before the control plane is cut off.
      const first = await startExtraGateway({
        ...store,
        CONTROL_PLANE_INTERNAL_URL: relay.url,
        FINISH_FLUSH_MS: '60000',
        SHUTDOWN_DRAIN_MS: '300',
      });
      const key = await t.key({ credits: CREDITS });
      // A stream that shows no usage: no receipt waits for its settlement, which stays queued.
      const reply = await t.post(
        '/v1/chat/completions',
        key.secret,
        { ...bodyFor('/v1/chat/completions', 'gpt-test', 'input_tokens=30,output_tokens=7'), stream: true },
        { baseUrl: first.server.url },
      );
      expect(reply.status, reply.text).toBe(200);
      await relay.cut();
      await first.close();
      // Not settled yet: nothing charged, the call's reservation still held.
      const open = await t.stack.balances(key.accountId);
      expect(open.reservedCredits).toBeGreaterThan(0n);
      expect(open.credits + open.reservedCredits).toBe(CREDITS);

      const next = await startExtraGateway({ ...store, FINISH_FLUSH_MS: '20' });
      extraGateways.push(next);
      const row = await finishedReservation(key, next);
      expect([row.status, row.charged_credits]).toEqual(['settled', 30n * 2n + 7n * 8n]);
    }
  });
});
