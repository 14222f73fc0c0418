/**
 * Receipts (docs/receipts.md): every settled answer tells its caller what the ledger charged,
 * beside `usage` in a whole body and in the final usage event of a stream, on each surface, served
 * natively or translated; the x-request-id names the call. A settlement that does not answer in
 * time ends the answer anyway, its cost marked unconfirmed, and is charged unchanged later.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { createLogger } from '@tollgate/service-kit';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { type RunningGateway, startGateway } from '../src/server.ts';
import { bodyFor, type Json, type Reply, sseData, uniqueTag, useStack } from './support.ts';

const t = useStack('gw-receipts');
const extraGateways: RunningGateway[] = [];
afterAll(async () => {
  for (const gateway of extraGateways) await gateway.close();
});

const PATHS = ['/v1/messages', '/v1/chat/completions', '/v1/responses'] as const;

/** The usage object the caller was told: the body's, or the stream's final usage event's. */
function toldUsage(reply: Reply, stream: boolean): Json {
  if (!stream) return JSON.parse(reply.text).usage;
  const events = sseData(reply.text);
  if (reply.path === '/v1/messages') return events.find((event) => event.type === 'message_delta')!.usage;
  if (reply.path === '/v1/chat/completions')
    return events.find((event) => event.usage && event.choices.length === 0)!.usage;
  return events.find((event) => event.type === 'response.completed')!.response.usage;
}

function streamed(path: string, body: Json): Json {
  return path === '/v1/chat/completions'
    ? { ...body, stream: true, stream_options: { include_usage: true } }
    : { ...body, stream: true };
}

describe('the cost of a settled call', () => {
  it('is told on every surface, streamed and not, native and translated, and equals what the ledger charged', async () => {
    const key = await t.key({ credits: 10_000_000n });
    const told = new Map<string, Json>();
    for (const alias of ['claude-all', 'gpt-all']) {
      for (const path of PATHS) {
        for (const stream of [false, true]) {
          const input = 10 + told.size * 7;
          const output = 3 + told.size * 5;
          const body = bodyFor(
            path,
            alias,
            `tag=${uniqueTag()},input_tokens=${input},output_tokens=${output}`,
          );
          const reply = await t.post(path, key.secret, stream ? streamed(path, body) : body);
          expect(reply.status, reply.text).toBe(200);
          const requestId = reply.headers.get('x-request-id');
          expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
          const usage = toldUsage(reply, stream);
          expect(usage.cost_details, `${alias} ${path} stream=${stream}`).toMatchObject({
            status: 'settled',
            request_id: requestId,
          });
          expect(typeof usage.cost).toBe('number');
          told.set(requestId!, usage);
        }
      }
    }
    await t.stack.settled();
    const rows = await t.stack.reservations(key.accountId);
    expect(rows).toHaveLength(told.size);
    for (const row of rows) {
      const usage = told.get(row.id)!;
      expect(usage.cost).toBe(Number(row.charged_credits));
      expect(usage.cost_details).toEqual({
        status: 'settled',
        credits: Number(row.charged_credits),
        entitlement_tokens: Number(row.charged_tokens),
        written_off_credits: Number(row.written_off_credits),
        written_off_tokens: Number(row.written_off_tokens),
        request_id: row.id,
      });
      // The alias's prices (3/15 and 2/8 credits a token) times the usage the mock reported.
      const [inputPrice, outputPrice] = row.alias === 'claude-all' ? [3n, 15n] : [2n, 8n];
      expect(row.charged_credits).toBe(row.input_tokens! * inputPrice + row.output_tokens! * outputPrice);
    }
  });

  it('of a call a package pays for is zero credits and the tokens drawn from the entitlement', async () => {
    const key = await t.key({ packages: ['pro'] });
    const reply = await t.post(
      '/v1/chat/completions',
      key.secret,
      bodyFor('/v1/chat/completions', 'tokens-test', `tag=${uniqueTag()},input_tokens=40,output_tokens=2`),
    );
    expect(reply.status, reply.text).toBe(200);
    expect(JSON.parse(reply.text).usage).toMatchObject({
      prompt_tokens: 40,
      completion_tokens: 2,
      cost: 0,
      cost_details: { status: 'settled', credits: 0, entitlement_tokens: 42 },
    });
  });

  it('is not added to a chat stream whose caller did not ask for usage', async () => {
    const key = await t.key({ credits: 1_000_000n });
    const reply = await t.post('/v1/chat/completions', key.secret, {
      ...bodyFor('/v1/chat/completions', 'gpt-test', `tag=${uniqueTag()}`),
      stream: true,
    });
    expect(reply.status).toBe(200);
    expect(reply.text).not.toContain('"cost"');
    expect(reply.text).toContain('data: [DONE]');
  });
});

/** A TCP relay to the control plane's internal API that can stop passing bytes, and start again. */
async function startStallableRelay(target: URL): Promise<{ url: string; stall(): void; resume(): void }> {
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  relaySockets.push(pairs);
  let stalled = false;
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    const pair = { client, upstream };
    pairs.add(pair);
    for (const socket of [client, upstream]) {
      socket.on('close', () => pairs.delete(pair));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    upstream.pipe(client);
    if (!stalled) client.pipe(upstream);
    else client.pause();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  extraServers.push(server);
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    stall() {
      stalled = true;
      for (const { client, upstream } of pairs) {
        client.unpipe(upstream);
        client.pause();
      }
    },
    resume() {
      stalled = false;
      for (const { client, upstream } of pairs) client.pipe(upstream);
    },
  };
}
const extraServers: Server[] = [];
const relaySockets: Array<Set<{ client: Socket; upstream: Socket }>> = [];
afterAll(async () => {
  for (const server of extraServers) {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const pairs of relaySockets)
      for (const { client, upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
    await closed;
  }
});

async function startExtraGateway(env: Record<string, string>): Promise<RunningGateway> {
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      t.stack.gatewayLogs.push(String(chunk));
      callback();
    },
  });
  const config = loadConfig({ ...t.stack.gateways[0]!.deps.config.env, ...env });
  const gateway = await startGateway(config, {
    logger: createLogger({ name: 'gateway', level: 'warn', destination }),
  });
  extraGateways.push(gateway);
  return gateway;
}

describe('a settlement that does not answer in time', () => {
  /**
   * One messages call, streamed and then not, through a gateway whose way to the control plane
   * stalls once the call is under way (its reservation answered); the provider answers after
   * 200 ms with this input and 4 output tokens. Each reply with how long it took after the stall,
   * then the calls' ledger rows once the way is open again.
   */
  async function callsWhileStalled(inputTokens: number) {
    const relay = await startStallableRelay(new URL(t.stack.controlPlane.internalServer.url));
    const gateway = await startExtraGateway({
      CONTROL_PLANE_INTERNAL_URL: relay.url,
      RECEIPT_WAIT_MS: '300',
    });
    const key = await t.key({ credits: 1_000_000n });
    await t.stack.eventsDelivered([gateway]);
    const replies: Array<{ stream: boolean; reply: Reply; waited: number }> = [];
    for (const stream of [false, true]) {
      const tag = uniqueTag();
      const body = bodyFor(
        '/v1/messages',
        'claude-test',
        `tag=${tag},delay=200,input_tokens=${inputTokens},output_tokens=4`,
      );
      const pending = t.post('/v1/messages', key.secret, stream ? streamed('/v1/messages', body) : body, {
        baseUrl: gateway.server.url,
      });
      const started = Date.now();
      while (t.tagged(tag) === 0 && Date.now() - started < 5_000) await new Promise((r) => setImmediate(r));
      relay.stall();
      const sent = Date.now();
      const reply = await pending;
      replies.push({ stream, reply, waited: Date.now() - sent });
      relay.resume();
    }
    expect(await gateway.drainBilling(10_000)).toBe(true);
    const rows = await t.stack.reservations(key.accountId);
    return { replies, charged: rows.map((row) => [row.status, row.charged_credits]) };
  }

  it('does not delay a call within its reservation: its cost is told from the reservation at once', async () => {
    // Less input than the prompt's estimate: the usage fits the reservation's credit leg.
    const { replies, charged } = await callsWhileStalled(2);
    for (const { stream, reply } of replies) {
      expect(reply.status, reply.text).toBe(200);
      const usage = toldUsage(reply, stream);
      expect(usage).toMatchObject({ output_tokens: 4, cost: 2 * 3 + 4 * 15 });
      expect(usage.cost_details).toEqual({
        status: 'settled',
        credits: 2 * 3 + 4 * 15,
        entitlement_tokens: 0,
        written_off_credits: 0,
        written_off_tokens: 0,
        request_id: reply.headers.get('x-request-id'),
      });
    }
    expect(charged).toEqual([
      ['settled', 2n * 3n + 4n * 15n],
      ['settled', 2n * 3n + 4n * 15n],
    ]);
  });

  it('ends the answer of a call beyond its reservation within the wait, cost unconfirmed, charged unchanged once it lands', async () => {
    // More input than was reserved for: only the settlement knows what that costs.
    const { replies, charged } = await callsWhileStalled(5000);
    for (const { stream, reply, waited } of replies) {
      expect(reply.status, reply.text).toBe(200);
      expect(waited).toBeLessThan(200 + 300 + 400);
      const usage = toldUsage(reply, stream);
      // A messages stream tells its input in message_start, its output beside the cost.
      expect(usage).toMatchObject({
        ...(stream ? {} : { input_tokens: 5000 }),
        output_tokens: 4,
        cost: null,
      });
      expect(usage.cost_details).toEqual({
        status: 'unconfirmed',
        request_id: reply.headers.get('x-request-id'),
      });
    }
    expect(charged).toEqual([
      ['settled', 5000n * 3n + 4n * 15n],
      ['settled', 5000n * 3n + 4n * 15n],
    ]);
  });
});

describe('RECEIPT_WAIT_MS=0', () => {
  it('answers a call beyond its reservation without waiting, cost unconfirmed, and the receipt then reads the charge', async () => {
    const gateway = await startExtraGateway({ RECEIPT_WAIT_MS: '0' });
    const key = await t.key({ credits: 1_000_000n });
    await t.stack.eventsDelivered([gateway]);
    const reply = await t.post(
      '/v1/responses',
      key.secret,
      bodyFor('/v1/responses', 'gpt-test', `tag=${uniqueTag()},input_tokens=5000,output_tokens=2`),
      { baseUrl: gateway.server.url },
    );
    expect(reply.status, reply.text).toBe(200);
    const requestId = reply.headers.get('x-request-id')!;
    expect(JSON.parse(reply.text).usage).toMatchObject({
      cost: null,
      cost_details: { status: 'unconfirmed', request_id: requestId },
    });
    expect(await gateway.drainBilling(10_000)).toBe(true);
    const receipt = await t.get(`/v1/key/usage/${requestId}`, key.secret, { baseUrl: gateway.server.url });
    expect(JSON.parse(receipt.text)).toMatchObject({
      state: 'settled',
      charged: { credits: String(5000 * 2 + 2 * 8) },
    });
  });
});

describe('GET /v1/key/usage/{request_id}', () => {
  it("shows the key its call's receipt: alias, token parts, prices, what each source gave, state", async () => {
    const key = await t.key({ credits: 1_000_000n, packages: ['pro'] });
    const tag = uniqueTag();
    const call = await t.post(
      '/v1/chat/completions',
      key.secret,
      bodyFor('/v1/chat/completions', 'gpt-test', `tag=${tag},input_tokens=30,output_tokens=5`),
    );
    expect(call.status, call.text).toBe(200);
    const requestId = call.headers.get('x-request-id')!;
    const told = JSON.parse(call.text).usage;

    const reply = await t.get(`/v1/key/usage/${requestId}`, key.secret);
    expect(reply.status, reply.text).toBe(200);
    expect(reply.headers.get('x-ratelimit-remaining-requests')).not.toBeNull();
    const receipt = JSON.parse(reply.text);
    const [entitlement] = await t.stack.controlPlane.deps.db
      .selectFrom('entitlements')
      .select('id')
      .where('account_id', '=', key.accountId)
      .execute();
    // The package covers gpt-test: its tokens pay, no credit is drawn.
    expect(receipt).toMatchObject({
      requestId,
      keyId: key.keyId,
      alias: 'gpt-test',
      surface: 'chat_completions',
      state: 'settled',
      outcome: 'ok',
      httpStatus: 200,
      usage: { inputTokens: '30', outputTokens: '5' },
      charged: { tokens: '35', credits: '0' },
      writtenOff: { tokens: '0', credits: '0' },
      drawn: [{ source: 'entitlement', entitlementId: entitlement!.id, packageId: 'pro', amount: '35' }],
    });
    expect(told).toMatchObject({ cost: 0, cost_details: { entitlement_tokens: 35, request_id: requestId } });
    t.expectNothingLeaked(reply.text);
  });

  it('shows a credit-paid call with the prices fixed when it was reserved', async () => {
    const key = await t.key({ credits: 1_000_000n });
    const call = await t.post(
      '/v1/messages',
      key.secret,
      bodyFor('/v1/messages', 'claude-test', `tag=${uniqueTag()},input_tokens=11,output_tokens=7`),
    );
    const requestId = call.headers.get('x-request-id')!;
    const receipt = JSON.parse((await t.get(`/v1/key/usage/${requestId}`, key.secret)).text);
    expect(receipt).toMatchObject({
      state: 'settled',
      usage: { inputTokens: '11', outputTokens: '7' },
      prices: { input: '3', output: '15' },
      charged: { tokens: '0', credits: String(11 * 3 + 7 * 15) },
      drawn: [{ source: 'credit', entitlementId: null, packageId: null, amount: String(11 * 3 + 7 * 15) }],
    });
    expect(JSON.parse(call.text).usage.cost).toBe(11 * 3 + 7 * 15);
  });

  it("is not_found for another key's call, an unknown id and a malformed one", async () => {
    const owner = await t.key({ credits: 1_000_000n });
    const call = await t.post(
      '/v1/responses',
      owner.secret,
      bodyFor('/v1/responses', 'gpt-test', `tag=${uniqueTag()}`),
    );
    const requestId = call.headers.get('x-request-id')!;
    const stranger = await t.key({ credits: 1_000_000n });
    for (const [secret, id] of [
      [stranger.secret, requestId],
      [owner.secret, '0190a3b4-0000-7000-8000-000000000000'],
      [owner.secret, 'not-a-request-id'],
    ] as const) {
      const reply = await t.get(`/v1/key/usage/${id}`, secret);
      const message = t.expectError(reply, 404, 'not_found');
      expect(message).toBe('This key made no call with that request id.');
    }
    t.expectError(await t.get(`/v1/key/usage/${requestId}`, null), 401, 'invalid_api_key');
  });
});
