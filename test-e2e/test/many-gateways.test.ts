/**
 * Three gateway processes behind Debian's nginx, sharing one control plane and one Redis: a key's
 * request ceiling and concurrency hold across all of them, and `kill -9` of one gateway under
 * load costs at most the calls that were in flight on it, while the others keep serving, its
 * concurrency leases free themselves, and the ledger stays consistent.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openaiClient } from '../src/clients.ts';
import { type Customer, signUpCustomer } from '../src/customer.ts';
import { type RunningNginx, startNginx } from '../src/nginx.ts';
import { type E2EStack, type RunningGatewayProcess, startStack } from '../src/stack.ts';

// Short leases: a killed gateway's leases are back within seconds.
const LEASE_TTL_SECONDS = 3;
let stack: E2EStack;
let customer: Customer;
let gateways: RunningGatewayProcess[];
let nginx: RunningNginx;
let folder: string;

beforeAll(async () => {
  // The keys below choose ceilings past the default account maxima (a load test's, not a customer's).
  stack = await startStack('many-gateways', {
    controlPlaneEnv: { KEY_MAX_CONCURRENCY: '64', KEY_MAX_REQUESTS_PER_MINUTE: '1000000' },
  });
  customer = await signUpCustomer(stack, { credits: 100_000_000n });
  gateways = [];
  for (const name of ['a', 'b', 'c']) {
    gateways.push(
      await stack.startGateway(name, { LEASE_TTL_SECONDS: String(LEASE_TTL_SECONDS), LOG_LEVEL: 'warn' }),
    );
  }
  folder = await mkdtemp(path.join(tmpdir(), 'tollgate-nginx-'));
  nginx = await startNginx(
    folder,
    gateways.map((gateway) => gateway.url),
  );
});

afterAll(async () => {
  await nginx?.stop();
  if (folder) await rm(folder, { recursive: true, force: true });
  // Every reservation the killed gateway left behind must still add up.
  if (stack) expect(await stack.admin('verify-ledger')).toEqual({ consistent: true, problems: [] });
  await stack?.close();
});

/** One chat call through nginx; its HTTP status and error code (undefined on success). */
async function call(client: OpenAI, content: string): Promise<{ status: number; code?: string }> {
  try {
    await client.chat.completions.create({
      model: 'gpt-e2e',
      max_tokens: 8,
      messages: [{ role: 'user', content }],
    });
    return { status: 200 };
  } catch (error) {
    const failure = error as { status?: number; code?: string };
    return { status: failure.status ?? 0, ...(failure.code ? { code: failure.code } : {}) };
  }
}

const tally = (results: Array<{ status: number; code?: string }>) => {
  const counts: Record<string, number> = {};
  for (const result of results) {
    const label = result.status === 200 ? 'ok' : `${result.status} ${result.code ?? ''}`.trim();
    counts[label] = (counts[label] ?? 0) + 1;
  }
  return counts;
};

describe('three gateways behind nginx', () => {
  it('admits exactly R requests of a key with a ceiling of R, across all gateways', async () => {
    const { secret } = await customer.createKey({
      name: 'ceiling',
      limits: { requestsPerMinute: 10, concurrency: 30 },
    });
    const client = openaiClient(nginx.url, secret);
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, index) =>
        call(client, `ceiling ${index} @mock(input_tokens=5,output_tokens=2)`),
      ),
    );
    expect(tally(results)).toEqual({ ok: 10, '429 rate_limit_exceeded': 20 });
  });

  it('holds a key to its concurrency across all gateways', async () => {
    const { secret } = await customer.createKey({ name: 'concurrency', limits: { concurrency: 2 } });
    const client = openaiClient(nginx.url, secret);
    const slow = (index: number) =>
      call(client, `slow ${index} @mock(delay=1500,input_tokens=5,output_tokens=2)`);
    const results = await Promise.all(Array.from({ length: 9 }, (_, index) => slow(index)));
    expect(tally(results)).toEqual({ ok: 2, '429 concurrency_limit_exceeded': 7 });
    // Finished calls gave their leases back.
    expect(tally(await Promise.all([slow(10), slow(11)]))).toEqual({ ok: 2 });
  });

  it('survives kill -9 of one gateway under load; its leases free themselves', async () => {
    const workers = 6;
    // Room for every worker plus every lease the victim may take with it: during the load no call
    // is refused for concurrency; after the lease TTL the full width must be usable again.
    const width = workers * 2;
    const { secret } = await customer.createKey({
      name: 'kill',
      limits: { concurrency: width, requestsPerMinute: 1_000_000 },
    });
    const client = openaiClient(nginx.url, secret);
    const victim = gateways[1];
    if (!victim) throw new Error('no gateway to kill');
    const killAt = Date.now() + 1_500;
    const stopAt = killAt + 3_000;
    const results: Array<{ status: number; code?: string; endedAt: number }> = [];
    const worker = async (id: number) => {
      for (let round = 0; Date.now() < stopAt; round += 1) {
        const result = await call(
          client,
          `load ${id}-${round} @mock(delay=150,input_tokens=5,output_tokens=2)`,
        );
        results.push({ ...result, endedAt: Date.now() });
      }
    };
    const load = Promise.all(Array.from({ length: workers }, (_, id) => worker(id)));
    // Real time: the load runs on every gateway before the kill.
    await new Promise((resolve) => setTimeout(resolve, killAt - Date.now()));
    victim.service.child.kill('SIGKILL');
    await load;

    const failed = results.filter((result) => result.status !== 200);
    // Each worker has at most one call in flight, and only those on the victim can fail.
    expect(failed.length, JSON.stringify(tally(failed))).toBeLessThanOrEqual(workers);
    // The victim had calls in flight (so leases to lose), and they failed as the proxy's 502.
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.every((result) => result.status === 502)).toBe(true);
    expect(failed.every((result) => result.endedAt >= killAt)).toBe(true);
    // The other gateways kept serving after the kill.
    const servedAfter = results.filter((result) => result.status === 200 && result.endedAt > killAt + 500);
    expect(servedAfter.length).toBeGreaterThan(workers);

    // The victim's leases expire: the key's whole concurrency is usable again.
    await new Promise((resolve) => setTimeout(resolve, (LEASE_TTL_SECONDS + 1) * 1000));
    const burst = await Promise.all(
      Array.from({ length: workers }, (_, index) =>
        call(client, `after ${index} @mock(delay=500,input_tokens=5,output_tokens=2)`),
      ),
    );
    expect(tally(burst)).toEqual({ ok: workers });
  });
});

describe('the shipped nginx config in front of them', () => {
  const key = () => customer.createKey({ name: 'nginx', limits: { maxRequestBytes: 1024 * 1024 } });

  it('refuses a key in the query string with invalid_api_key, and no log holds it', async () => {
    const { secret } = await key();
    const models = await fetch(`${nginx.url}/v1/models?api_key=${secret}`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(models.status).toBe(401);
    expect(models.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await models.json()).toMatchObject({ error: { code: 'invalid_api_key' } });
    const messages = await fetch(`${nginx.url}/v1/messages?beta=true&x=${secret.replace('sk-', 'sk%2D')}`, {
      method: 'POST',
      headers: { 'x-api-key': secret, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(messages.status).toBe(401);
    expect(await messages.json()).toMatchObject({
      type: 'error',
      error: { service_code: 'invalid_api_key' },
    });
    // A query without a key passes, and is logged without its query string.
    const plain = await fetch(`${nginx.url}/v1/models?limit=5`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(plain.status).toBe(200);
    const { readFile } = await import('node:fs/promises');
    // nginx writes a request's log line after its answer went out: on a loaded box, a moment later.
    await expect.poll(() => readFile(nginx.accessLog, 'utf8')).toContain('"GET /v1/models HTTP/1.1" 200');
    const access = await readFile(nginx.accessLog, 'utf8');
    expect(access).toContain('"GET /v1/models HTTP/1.1" 401');
    expect(access).toContain('"GET /v1/models HTTP/1.1" 200');
    expect(access).not.toContain('limit=5');
    for (const log of [access, await readFile(nginx.errorLog, 'utf8')]) {
      expect(log).not.toContain(secret.slice(6));
    }
  });

  it('answers a body over the gateways’ limit with request_too_large in the gateway’s words', async () => {
    const { secret } = await key();
    const over = 'x'.repeat(32 * 1024 * 1024 + 1);
    for (const [path, shape] of [
      ['/v1/chat/completions', { error: { code: 'request_too_large', type: 'request_too_large' } }],
      ['/v1/messages', { type: 'error', error: { service_code: 'request_too_large' } }],
    ] as const) {
      const reply = await fetch(`${nginx.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: over,
      });
      expect(reply.status).toBe(413);
      expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await reply.json()).toMatchObject(shape);
    }
    // Under nginx's limit but over the key's: the gateway refuses it, the same way.
    const reply = await fetch(`${nginx.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: 'x'.repeat(2 * 1024 * 1024),
    });
    expect(reply.status).toBe(413);
    expect(await reply.json()).toMatchObject({ error: { code: 'request_too_large' } });
  });
});
