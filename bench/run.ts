/**
 * Latency and throughput benchmark: mock upstream, control plane and gateway as separate
 * processes on a real Postgres and Redis, driven by wrk. Measures (a) the mock upstream directly
 * and (b) the gateway with full metering (auth, limits in Redis, reserve, upstream call, settle),
 * non-streamed and streamed, at 1, 10 and 50 connections; then time to first streamed byte.
 * Prints requests/s, p50/p90/p99, the gateway's added latency, errors and CPU per request of each
 * process. Stops everything it started. Usage: `pnpm bench` (or `node bench/run.ts`).
 *
 * Environment: BENCH_DATABASE_URL (admin URL of a Postgres whose user may create databases;
 * default postgres://postgres@127.0.0.1:5432/postgres), BENCH_REDIS_URL (redis://127.0.0.1:6379),
 * BENCH_SECONDS (per run, default 6), BENCH_CONNECTIONS (default "1,10,50").
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ROOT, run, type Service, startService, waitHealthy } from '@tollgate/test-harness';
import { Redis } from 'ioredis';
import pg from 'pg';
import { type CpuGroups, cpuSince, pidsNamed, snapshot } from './src/cpu.ts';
import { measureTimeToFirstByte } from './src/ttfb.ts';
import { runWrk, type WrkResult } from './src/wrk.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const seconds = Number(process.env.BENCH_SECONDS ?? 6);
const connectionLevels = (process.env.BENCH_CONNECTIONS ?? '1,10,50').split(',').map(Number);
const PORTS = { gateway: 18180, controlPlane: 18181, internal: 18182, mock: 18190 };

const work = mkdtempSync(path.join(tmpdir(), 'tollgate-bench-'));
const databaseName = `tollgate_bench_${randomBytes(4).toString('hex')}`;
const redisPrefix = `tollgate-bench:${randomBytes(4).toString('hex')}:`;
const services: Service[] = [];

async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

function databaseUrl(): string {
  const url = new URL(adminUrl);
  url.pathname = `/${databaseName}`;
  return url.toString();
}

async function startStack(): Promise<{ env: Record<string, string>; key: string }> {
  await withAdmin((client) => client.query(`create database "${databaseName}"`));
  const env: Record<string, string> = {
    INTERNAL_TOKEN_SECRET: randomBytes(32).toString('hex'),
    KEY_PEPPER: randomBytes(32).toString('hex'),
    KEY_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    DATABASE_URL: databaseUrl(),
    REDIS_URL: redisUrl,
    REDIS_KEY_PREFIX: redisPrefix,
    CATALOG_FILE: path.join(ROOT, 'deploy/catalog.example.yaml'),
    MOCK_UPSTREAM_URL: `http://127.0.0.1:${PORTS.mock}`,
    MOCK_UPSTREAM_PORT: String(PORTS.mock),
    CONTROL_PLANE_PORT: String(PORTS.controlPlane),
    CONTROL_PLANE_HOST: '127.0.0.1',
    CONTROL_PLANE_INTERNAL_PORT: String(PORTS.internal),
    CONTROL_PLANE_INTERNAL_URL: `http://127.0.0.1:${PORTS.internal}`,
    GATEWAY_PORT: String(PORTS.gateway),
    GATEWAY_HOST: '127.0.0.1',
    // Access logs at 5,000 lines/s would measure the terminal; errors and warnings still print.
    LOG_LEVEL: 'warn',
  };
  services.push(startService('mock-upstream', 'services/mock-upstream', env, work));
  services.push(startService('control-plane', 'services/control-plane', env, work));
  await waitHealthy(`http://127.0.0.1:${PORTS.mock}/health`);
  await waitHealthy(`http://127.0.0.1:${PORTS.controlPlane}/api/v1/health`);
  services.push(startService('gateway', 'services/gateway', env, work));
  await waitHealthy(`http://127.0.0.1:${PORTS.gateway}/health`);

  const admin = (...args: string[]) =>
    run(process.execPath, ['bin/tollgate-admin.ts', ...args], {
      cwd: path.join(ROOT, 'services/control-plane'),
      env,
    });
  await admin('create-account', 'bench@example.test', '--password', 'benchmark password');
  await admin('grant-credit', 'bench@example.test', '1000000000000000');
  const created = JSON.parse(
    await admin(
      'create-key',
      'bench@example.test',
      '--name',
      'bench',
      '--requests-per-minute',
      '100000000',
      '--concurrency',
      '10000',
    ),
  ) as { secret: string };
  // One call before measuring: a refusal here would make every number below meaningless.
  const probe = await fetch(`http://127.0.0.1:${PORTS.gateway}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${created.secret}` },
    body: chatBody(false),
  });
  if (probe.status !== 200)
    throw new Error(`the gateway refused the probe: ${probe.status} ${await probe.text()}`);
  return { env, key: created.secret };
}

async function stopStack(): Promise<void> {
  for (const service of services.reverse()) await service.stop().catch(() => {});
  await withAdmin((client) => client.query(`drop database if exists "${databaseName}" with (force)`)).catch(
    () => {},
  );
  const redis = new Redis(redisUrl);
  const keys = await redis.keys(`${redisPrefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
  rmSync(work, { recursive: true, force: true });
}

function chatBody(stream: boolean): string {
  return JSON.stringify({
    model: 'gpt-mock',
    messages: [
      { role: 'system', content: 'You are a concise assistant.' },
      { role: 'user', content: 'Say hello to the benchmark in a few words, please.' },
    ],
    max_tokens: 64,
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  });
}

interface Row {
  target: 'direct' | 'gateway';
  stream: boolean;
  connections: number;
  result: WrkResult;
  cpuPerRequestUs: Record<string, number>;
}

const format = (value: number, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');

function printReport(
  rows: Row[],
  ttfb: Record<string, { p50: number; p90: number; errors: number }>,
  settled: string,
) {
  const lines: string[] = [];
  lines.push(
    '',
    `Tollgate benchmark: ${seconds}s per run, wrk, everything on one ${process.platform} box`,
    '',
  );
  lines.push(
    '| mode | conns | target | req/s | p50 ms | p90 ms | p99 ms | added p50 ms | added p99 ms | errors | CPU us/req: gateway | control plane | postgres | redis | mock |',
  );
  lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const row of rows) {
    const direct = rows.find(
      (other) =>
        other.target === 'direct' && other.stream === row.stream && other.connections === row.connections,
    );
    const added = row.target === 'gateway' && direct;
    const cpu = row.cpuPerRequestUs;
    lines.push(
      `| ${row.stream ? 'stream' : 'json'} | ${row.connections} | ${row.target} | ${format(row.result.rps, 0)} | ${format(row.result.p50, 3)} | ${format(row.result.p90, 3)} | ${format(row.result.p99, 3)} | ${added ? format(row.result.p50 - direct.result.p50, 3) : ''} | ${added ? format(row.result.p99 - direct.result.p99, 3) : ''} | ${row.result.errors} | ${format(cpu.gateway ?? 0, 0)} | ${format(cpu.controlPlane ?? 0, 0)} | ${format(cpu.postgres ?? 0, 0)} | ${format(cpu.redis ?? 0, 0)} | ${format(cpu.mock ?? 0, 0)} |`,
    );
  }
  lines.push('', 'Time to first streamed byte (sequential, one connection):');
  for (const [target, value] of Object.entries(ttfb)) {
    lines.push(
      `  ${target}: p50 ${format(value.p50, 3)} ms, p90 ${format(value.p90, 3)} ms, errors ${value.errors}`,
    );
  }
  if (ttfb.gateway && ttfb.direct)
    lines.push(`  added p50: ${format(ttfb.gateway.p50 - ttfb.direct.p50, 3)} ms`);
  lines.push('', settled, '');
  console.log(lines.join('\n'));
}

async function main(): Promise<void> {
  const started = Date.now();
  const { env, key } = await startStack();
  const gatewayPid = services.find((service) => service.name === 'gateway')!.child.pid!;
  const controlPlanePid = services.find((service) => service.name === 'control-plane')!.child.pid!;
  const mockPid = services.find((service) => service.name === 'mock-upstream')!.child.pid!;
  const groups: CpuGroups = {
    gateway: () => [gatewayPid],
    controlPlane: () => [controlPlanePid],
    postgres: () => pidsNamed('postgres'),
    redis: () => pidsNamed('redis-server'),
    mock: () => [mockPid],
  };
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
  const targets = {
    direct: `http://127.0.0.1:${PORTS.mock}/v1/chat/completions`,
    gateway: `http://127.0.0.1:${PORTS.gateway}/v1/chat/completions`,
  };
  const rows: Row[] = [];
  for (const stream of [false, true]) {
    for (const connections of connectionLevels) {
      for (const target of ['direct', 'gateway'] as const) {
        const body = chatBody(stream);
        // Warm-up: connections, JIT, caches.
        await runWrk({ url: targets[target], body, headers, connections, seconds: 1, scriptDir: work });
        const before = snapshot(groups);
        const result = await runWrk({
          url: targets[target],
          body,
          headers,
          connections,
          seconds,
          scriptDir: work,
        });
        const cpu = cpuSince(groups, before);
        const cpuPerRequestUs = Object.fromEntries(
          Object.entries(cpu).map(([name, ms]) => [
            name,
            result.requests > 0 ? (ms * 1000) / result.requests : 0,
          ]),
        );
        rows.push({ target, stream, connections, result, cpuPerRequestUs });
        console.error(
          `${stream ? 'stream' : 'json'} c=${connections} ${target}: ${format(result.rps, 0)} req/s, p50 ${format(result.p50, 3)} ms, errors ${result.errors}`,
        );
      }
    }
  }
  const ttfb = {
    direct: await measureTimeToFirstByte({
      origin: `http://127.0.0.1:${PORTS.mock}`,
      path: '/v1/chat/completions',
      body: chatBody(true),
      headers,
      count: 500,
    }),
    gateway: await measureTimeToFirstByte({
      origin: `http://127.0.0.1:${PORTS.gateway}`,
      path: '/v1/chat/completions',
      body: chatBody(true),
      headers,
      count: 500,
    }),
  };
  // Every metered call must have been settled exactly: the ledger check runs on the bench database.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const ledger = JSON.parse(
    await run(process.execPath, ['bin/tollgate-admin.ts', 'verify-ledger'], {
      cwd: path.join(ROOT, 'services/control-plane'),
      env,
    }),
  ) as { consistent: boolean; problems: string[] };
  const counts = await withAdmin(async () => {
    const client = new pg.Client({ connectionString: databaseUrl() });
    await client.connect();
    try {
      const result = await client.query<{ status: string; count: string }>(
        'select status, count(*)::text as count from reservations group by status order by status',
      );
      return result.rows.map((row) => `${row.status} ${row.count}`).join(', ');
    } finally {
      await client.end();
    }
  });
  printReport(
    rows,
    ttfb,
    `Metered calls recorded: ${counts}. Ledger consistent: ${ledger.consistent}${ledger.problems.length ? ` (${ledger.problems.slice(0, 3).join('; ')})` : ''}. Total time ${Math.round((Date.now() - started) / 1000)}s.`,
  );
}

try {
  await main();
} finally {
  await stopStack();
}
