/**
 * Reserve + settle benchmark of the control plane, both engines one after the other: Postgres
 * alone (no Redis), and the hot tier (Redis + Postgres). The control plane runs as its own
 * process; this script plays the gateway, calling the internal billing API over HTTP with a
 * service token. Each worker reserves, then settles what it reserved (batched like the gateway's
 * finish queue), at several concurrencies and batch sizes. Prints operations/s, latency
 * percentiles, CPU per operation of the control plane, Postgres and Redis, and checks the ledger.
 * Usage: `pnpm bench:billing` (or `node bench/billing.ts`).
 *
 * Environment: BENCH_DATABASE_URL (admin URL; default postgres://postgres@127.0.0.1:5432/postgres),
 * BENCH_REDIS_URL (default redis://127.0.0.1:6379), BENCH_SECONDS (per run, default 5).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { apiKeyDigest } from '@tollgate/schemas';
import { ROOT, removeRedisNamespace, run, startService, waitHealthy } from '@tollgate/test-harness';
import pg from 'pg';
import { cpuSince, pidsNamed, snapshot } from './src/cpu.ts';
import { internalApiClient } from './src/internal-api.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const PORTS = { public: 18281, internal: 18282 };
const ACCOUNTS = 20;

const work = mkdtempSync(path.join(tmpdir(), 'tollgate-billing-bench-'));

function databaseUrl(databaseName: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${databaseName}`;
  return url.toString();
}

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

interface Account {
  accountId: string;
  keyId: string;
  digest: string;
}

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? Number.NaN;
}

async function bench(engine: 'postgres' | 'hot tier'): Promise<string[]> {
  const databaseName = `tollgate_billing_bench_${randomBytes(4).toString('hex')}`;
  const redisPrefix = `tollgate-billing-bench:${randomBytes(4).toString('hex')}:`;
  await admin(`create database "${databaseName}"`);
  const env: Record<string, string> = {
    INTERNAL_TOKEN_SECRET: randomBytes(32).toString('hex'),
    KEY_PEPPER: randomBytes(32).toString('hex'),
    KEY_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    DATABASE_URL: databaseUrl(databaseName),
    ...(engine === 'hot tier' ? { REDIS_URL: redisUrl, REDIS_KEY_PREFIX: redisPrefix } : {}),
    CATALOG_FILE: path.join(ROOT, 'deploy/catalog.example.yaml'),
    CONTROL_PLANE_PORT: String(PORTS.public),
    CONTROL_PLANE_HOST: '127.0.0.1',
    CONTROL_PLANE_INTERNAL_PORT: String(PORTS.internal),
    LOG_LEVEL: 'warn',
  };
  const controlPlane = startService('control-plane', 'services/control-plane', env, work);
  try {
    await waitHealthy(`http://127.0.0.1:${PORTS.public}/api/v1/health`);
    const cli = (...args: string[]) =>
      run(process.execPath, ['bin/tollgate-admin.ts', ...args], {
        cwd: path.join(ROOT, 'services/control-plane'),
        env,
      });
    const accounts: Account[] = [];
    for (let index = 0; index < ACCOUNTS; index += 1) {
      const email = `billing-bench-${index}@example.test`;
      const { accountId } = JSON.parse(
        await cli('create-account', email, '--password', 'benchmark password'),
      ) as {
        accountId: string;
      };
      await cli('grant-credit', email, '1000000000000000');
      const { keyId, secret } = JSON.parse(await cli('create-key', email)) as {
        keyId: string;
        secret: string;
      };
      accounts.push({ accountId, keyId, digest: apiKeyDigest(secret) });
    }

    const { call, close } = await internalApiClient(PORTS.internal, env.INTERNAL_TOKEN_SECRET as string, 64);

    const groups = {
      controlPlane: () => [controlPlane.child.pid!],
      postgres: () => pidsNamed('postgres'),
      redis: () => pidsNamed('redis-server'),
    };
    const lines: string[] = [
      '',
      `Reserve + settle, ${engine} (${seconds}s per run; control plane as its own process; ${ACCOUNTS} accounts)`,
      '',
      '| workers | items per call | reserve+settle/s | reserve p50 ms | reserve p99 ms | settle p50 ms | settle p99 ms | refused | CPU us/op: control plane | postgres | redis |',
      '|---|---|---|---|---|---|---|---|---|---|---|',
    ];
    for (const [workers, batch] of [
      [1, 1],
      [10, 1],
      [50, 1],
      [10, 10],
      [50, 10],
    ] as const) {
      const reserveLatency: number[] = [];
      const settleLatency: number[] = [];
      let operations = 0;
      let refused = 0;
      const before = snapshot(groups);
      const deadline = performance.now() + seconds * 1000;
      await Promise.all(
        Array.from({ length: workers }, async (_, worker) => {
          while (performance.now() < deadline) {
            const items = Array.from({ length: batch }, (_unused, slot) => {
              const account = accounts[(worker * batch + slot + operations) % accounts.length]!;
              return { account, reservationId: randomUUID() };
            });
            let started = performance.now();
            const reserved = await call('/reservations', {
              items: items.map(({ account, reservationId }) => ({
                reservationId,
                keyDigest: account.digest,
                keyId: account.keyId,
                accountId: account.accountId,
                alias: 'gpt-mock',
                surface: 'chat_completions',
                estimate: { inputTokens: '200', outputTokens: '500' },
              })),
            });
            reserveLatency.push(performance.now() - started);
            refused += reserved.results.filter((result) => !result.ok).length;
            started = performance.now();
            await call('/reservations/finish', {
              items: items.map(({ account, reservationId }) => ({
                action: 'settle',
                reservationId,
                keyId: account.keyId,
                accountId: account.accountId,
                alias: 'gpt-mock',
                surface: 'chat_completions',
                httpStatus: 200,
                occurredAt: new Date().toISOString(),
                outcome: 'ok',
                usage: { inputTokens: '180', outputTokens: '120' },
              })),
            });
            settleLatency.push(performance.now() - started);
            operations += batch;
          }
        }),
      );
      const cpu = cpuSince(groups, before);
      reserveLatency.sort((a, b) => a - b);
      settleLatency.sort((a, b) => a - b);
      const row = [
        workers,
        batch,
        (operations / seconds).toFixed(0),
        percentile(reserveLatency, 0.5).toFixed(3),
        percentile(reserveLatency, 0.99).toFixed(3),
        percentile(settleLatency, 0.5).toFixed(3),
        percentile(settleLatency, 0.99).toFixed(3),
        refused,
        ((cpu.controlPlane! * 1000) / operations).toFixed(0),
        ((cpu.postgres! * 1000) / operations).toFixed(0),
        ((cpu.redis! * 1000) / operations).toFixed(0),
      ];
      lines.push(`| ${row.join(' | ')} |`);
      console.error(`${engine}: workers ${workers}, batch ${batch}: ${row[2]} reserve+settle/s`);
    }
    await close();
    const ledger = JSON.parse(await cli('verify-ledger')) as { consistent: boolean; problems: string[] };
    lines.push('', `Ledger consistent after the runs: ${ledger.consistent}`);
    return lines;
  } finally {
    await controlPlane.stop();
    await admin(`drop database if exists "${databaseName}" with (force)`).catch(() => {});
    await removeRedisNamespace(redisUrl, redisPrefix);
  }
}

try {
  const lines = [...(await bench('postgres')), ...(await bench('hot tier'))];
  console.log([...lines, ''].join('\n'));
} finally {
  rmSync(work, { recursive: true, force: true });
}
