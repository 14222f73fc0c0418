/**
 * Soak and fault run (not CI): mock upstream, control plane and two gateways as processes on a
 * real Postgres and Redis; mixed traffic at a steady rate (all four surfaces, streamed and not,
 * 5% upstream faults, client aborts) round-robin over the gateways, with a control-plane restart
 * at 1/3 of the run and `kill -9` of one gateway at 2/3 (restarted 5 s later). Reports memory
 * growth of each process, p99 per interval (drift), outcomes by code, and the ledger: drift must
 * be 0 (`verify-ledger`), and no reservation may stay open after the settle-out.
 * Usage: `node bench/soak.ts` (30 min); `SOAK_MINUTES=3 SOAK_RATE=20 node bench/soak.ts`.
 * Environment: SOAK_DATABASE_URL, SOAK_REDIS_URL (as the benchmark's), SOAK_MINUTES, SOAK_RATE.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  findFreePort,
  ROOT,
  removeRedisNamespace,
  run,
  type Service,
  startService,
  waitHealthy,
} from '@tollgate/test-harness';
import { Redis } from 'ioredis';
import pg from 'pg';

const adminUrl = process.env.SOAK_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.SOAK_REDIS_URL ?? 'redis://127.0.0.1:6379';
const minutes = Number(process.env.SOAK_MINUTES ?? 30);
const rate = Number(process.env.SOAK_RATE ?? 20);
const INTERVALS = 10;
const work = mkdtempSync(path.join(tmpdir(), 'tollgate-soak-'));
const databaseName = `tollgate_soak_${randomBytes(4).toString('hex')}`;
const redisPrefix = `tollgate-soak:${randomBytes(4).toString('hex')}:`;
const services = new Map<string, Service>();

interface Outcome {
  at: number;
  ms: number;
  label: string;
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>, url = adminUrl): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Resident memory of a process in MiB (Linux /proc). */
function rssMiB(pid: number | undefined): number {
  if (!pid) return Number.NaN;
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

const p99 = (values: number[]) => {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] ?? Number.NaN;
};

/** One call of the mix: which surface, streamed or not, a fault or an abort now and then. */
function pick(index: number): { path: string; body: unknown; anthropic: boolean; abortMs?: number } {
  const fault = index % 20 === 7 ? (index % 40 === 7 ? ',status=500' : ',stream_error') : '';
  const abort = index % 25 === 3;
  const stream = index % 2 === 0 || abort;
  const text = `soak ${index} @mock(input_tokens=${20 + (index % 50)},output_tokens=${5 + (index % 30)}${fault}${abort ? ',chunk_delay=50,words=40' : ''})`;
  const kind = index % 4;
  if (kind === 0)
    return {
      path: '/v1/messages/count_tokens',
      anthropic: true,
      body: { model: 'claude-mock', messages: [{ role: 'user', content: text }] },
    };
  if (kind === 1)
    return {
      path: '/v1/messages',
      anthropic: true,
      ...(abort ? { abortMs: 60 } : {}),
      body: { model: 'claude-mock', max_tokens: 64, stream, messages: [{ role: 'user', content: text }] },
    };
  if (kind === 2)
    return {
      path: '/v1/responses',
      anthropic: false,
      ...(abort ? { abortMs: 60 } : {}),
      body: { model: 'gpt-mock', max_output_tokens: 64, stream, input: text },
    };
  return {
    path: '/v1/chat/completions',
    anthropic: false,
    ...(abort ? { abortMs: 60 } : {}),
    body: {
      model: 'gpt-mock',
      max_tokens: 64,
      stream,
      ...(stream ? { stream_options: { include_usage: true } } : {}),
      messages: [{ role: 'user', content: text }],
    },
  };
}

async function main(): Promise<void> {
  await admin((client) => client.query(`create database "${databaseName}"`));
  const dbUrl = Object.assign(new URL(adminUrl), { pathname: `/${databaseName}` }).toString();
  const [mockPort, cpPort, internalPort, gwA, gwB] = await Promise.all(
    [1, 2, 3, 4, 5].map(() => findFreePort()),
  );
  const env: Record<string, string> = {
    INTERNAL_TOKEN_SECRET: randomBytes(32).toString('hex'),
    KEY_PEPPER: randomBytes(32).toString('hex'),
    KEY_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    DATABASE_URL: dbUrl,
    REDIS_URL: redisUrl,
    REDIS_KEY_PREFIX: redisPrefix,
    CATALOG_FILE: path.join(ROOT, 'deploy/catalog.example.yaml'),
    MOCK_UPSTREAM_URL: `http://127.0.0.1:${mockPort}`,
    MOCK_UPSTREAM_PORT: String(mockPort),
    CONTROL_PLANE_PORT: String(cpPort),
    CONTROL_PLANE_HOST: '127.0.0.1',
    CONTROL_PLANE_INTERNAL_PORT: String(internalPort),
    CONTROL_PLANE_INTERNAL_URL: `http://127.0.0.1:${internalPort}`,
    LEASE_TTL_SECONDS: '5',
    LOG_LEVEL: 'warn',
  };
  const start = async (name: string, dir: string, extra: Record<string, string>, health: string) => {
    const service = startService(name, dir, { ...env, ...extra }, work);
    services.set(name, service);
    await waitHealthy(health, 60_000, service);
  };
  const gateways = [
    { name: 'gateway-a', port: gwA!, up: true },
    { name: 'gateway-b', port: gwB!, up: true },
  ];
  const startGateway = (gateway: (typeof gateways)[number]) =>
    start(
      gateway.name,
      'services/gateway',
      { GATEWAY_PORT: String(gateway.port), GATEWAY_HOST: '127.0.0.1' },
      `http://127.0.0.1:${gateway.port}/livez`,
    );
  await start('mock-upstream', 'services/mock-upstream', {}, `http://127.0.0.1:${mockPort}/health`);
  await start('control-plane', 'services/control-plane', {}, `http://127.0.0.1:${cpPort}/api/v1/health`);
  for (const gateway of gateways) await startGateway(gateway);

  const cli = (...args: string[]) =>
    run(process.execPath, ['bin/tollgate-admin.ts', ...args], {
      cwd: path.join(ROOT, 'services/control-plane'),
      env,
    });
  await cli('create-account', 'soak@example.test', '--password', 'soak run password');
  await cli('grant-credit', 'soak@example.test', '1000000000000');
  const { secret } = JSON.parse(
    await cli(
      'create-key',
      'soak@example.test',
      '--name',
      'soak',
      '--requests-per-minute',
      '100000000',
      '--concurrency',
      '10000',
    ),
  ) as { secret: string };

  const durationMs = minutes * 60_000;
  const began = Date.now();
  const outcomes: Outcome[] = [];
  const memory: Record<string, number[]> = {};
  const sampleMemory = () => {
    for (const [name, service] of services) {
      const series = memory[name] ?? [];
      series.push(rssMiB(service.exited ? undefined : service.child.pid));
      memory[name] = series;
    }
  };
  sampleMemory();
  const memoryTimer = setInterval(sampleMemory, 10_000);
  const events: string[] = [];
  const faults = (async () => {
    await new Promise((resolve) => setTimeout(resolve, durationMs / 3));
    events.push(`${((Date.now() - began) / 1000).toFixed(0)} s: control plane restarted (SIGTERM, start)`);
    await services.get('control-plane')?.stop();
    await start('control-plane', 'services/control-plane', {}, `http://127.0.0.1:${cpPort}/api/v1/health`);
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, began + (durationMs * 2) / 3 - Date.now())),
    );
    const victim = gateways[1]!;
    events.push(
      `${((Date.now() - began) / 1000).toFixed(0)} s: ${victim.name} killed (SIGKILL), restarted 5 s later`,
    );
    victim.up = false;
    services.get(victim.name)?.child.kill('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    await startGateway(victim);
    victim.up = true;
  })();

  const inFlight = new Set<Promise<void>>();
  let index = 0;
  while (Date.now() - began < durationMs) {
    const next = began + (index * 1000) / rate;
    if (next > Date.now()) await new Promise((resolve) => setTimeout(resolve, next - Date.now()));
    const call = pick(index);
    // A client sees the kill as refused connections until it notices; it then uses the other one.
    const live = gateways.filter((gateway) => gateway.up);
    const gateway = live[index % live.length]!;
    index += 1;
    const started = performance.now();
    const controller = new AbortController();
    if (call.abortMs) setTimeout(() => controller.abort(), call.abortMs);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (call.anthropic) headers['x-api-key'] = secret;
    else headers.authorization = `Bearer ${secret}`;
    const task = fetch(`http://127.0.0.1:${gateway.port}${call.path}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(call.body),
      signal: controller.signal,
    })
      .then(async (response) => {
        const text = await response.text();
        // The catalogue code: `code` in OpenAI-style bodies; Anthropic-style bodies carry it in `type`.
        const code = response.ok
          ? 'ok'
          : (/"code":\s*"([a-z_]+)"/.exec(text)?.[1] ??
            /"type":\s*"([a-z_]+)"/.exec(text.replace(/"type":\s*"error"/, ''))?.[1] ??
            String(response.status));
        outcomes.push({
          at: Date.now(),
          ms: performance.now() - started,
          label: `${response.status} ${code}`,
        });
      })
      .catch((error: unknown) => {
        const label = controller.signal.aborted
          ? 'client abort'
          : `network ${(error as Error).cause ? 'refused' : 'error'}`;
        outcomes.push({ at: Date.now(), ms: performance.now() - started, label });
      })
      .finally(() => inFlight.delete(task));
    inFlight.add(task);
  }
  await Promise.all(inFlight);
  await faults;
  clearInterval(memoryTimer);
  sampleMemory();

  // Settle-out: gateways flush their queues; then nothing may be left open.
  for (const gateway of gateways) await services.get(gateway.name)?.stop();
  const open =
    (await admin(
      (client) =>
        client.query<{ n: number }>(`select count(*)::int as n from reservations where status = 'reserved'`),
      dbUrl,
    )
      .then((result) => result.rows[0]?.n ?? 0)
      .catch(() => Number.NaN)) + (await openInRedis());
  const ledger = JSON.parse(await cli('verify-ledger')) as { consistent: boolean; problems: unknown[] };

  const byLabel: Record<string, number> = {};
  for (const outcome of outcomes) byLabel[outcome.label] = (byLabel[outcome.label] ?? 0) + 1;
  const slice = durationMs / INTERVALS;
  const drift = Array.from({ length: INTERVALS }, (_, i) =>
    p99(
      outcomes
        .filter(
          (o) => o.label.startsWith('200') && o.at - began >= i * slice && o.at - began < (i + 1) * slice,
        )
        .map((o) => o.ms),
    ),
  );
  const lines = [
    '',
    `Tollgate soak: ${minutes} min at ${rate} req/s, ${outcomes.length} calls, 2 gateways, ${process.platform}`,
    ...events.map((event) => `  ${event}`),
    '',
    'outcomes:',
    ...Object.entries(byLabel)
      .sort((a, b) => b[1] - a[1])
      .map(([label, count]) => `  ${label}: ${count}`),
    '',
    `p99 of 200s per ${(slice / 1000).toFixed(0)} s interval (ms): ${drift.map((v) => v.toFixed(1)).join(', ')}`,
    '',
    'resident memory, first sample -> last (MiB):',
    ...Object.entries(memory).map(
      ([name, values]) => `  ${name}: ${values[0]?.toFixed(1)} -> ${values.at(-1)?.toFixed(1)}`,
    ),
    '',
    `ledger: ${ledger.consistent ? 'consistent' : 'INCONSISTENT'} (${ledger.problems.length} problems); reservations still open after settle-out: ${open}`,
    '',
  ];
  console.log(lines.join('\n'));
  for (const service of services.values()) await service.stop().catch(() => {});
  await admin((client) => client.query(`drop database if exists "${databaseName}" with (force)`)).catch(
    () => {},
  );
  await removeRedisNamespace(redisUrl, redisPrefix);
  rmSync(work, { recursive: true, force: true });
}

async function withRedis<T>(fn: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  try {
    return await fn(redis);
  } finally {
    redis.disconnect();
  }
}

/** Calls the hot tier holds in Redis in flight (R) or finished and not yet written (D). */
function openInRedis(): Promise<number> {
  return withRedis(async (redis) => {
    let open = 0;
    for (const key of await redis.keys(`${redisPrefix}hot:*:calls`)) {
      open += (await redis.hvals(key)).filter((call) => !call.startsWith('G')).length;
    }
    return open;
  }).catch(() => Number.NaN);
}

main().catch((error: unknown) => {
  console.error('soak failed:', error instanceof Error ? error.message : error);
  process.exit(1);
});
