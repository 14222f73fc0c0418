/**
 * The metered stack every benchmark runs against: a database of its own, the mock upstream, the
 * control plane and one gateway on fixed ports, an account with a key that no ceiling limits, and
 * the ledger check at the end. Only one benchmark can run at a time (the ports are fixed).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  ROOT,
  removeRedisNamespace,
  run,
  type Service,
  startService,
  waitHealthy,
} from '@tollgate/test-harness';
import pg from 'pg';
import { scriptChildren, startScript, waitListening } from './scripts.ts';

export const PORTS = {
  gateway: 18180,
  controlPlane: 18181,
  internal: 18182,
  metrics: 18183,
  mock: 18190,
  floor: 18191,
  portkey: 18192,
  instantBilling: 18193,
};

export interface BenchStackOptions {
  adminUrl: string;
  redisUrl: string;
  /** When set, gateway and control plane write V8 CPU profiles there (node --cpu-prof). */
  profileDir?: string | undefined;
  /** Billing answered at once by a stand-in (bench/src/instant-billing.ts). */
  instantBilling?: boolean;
  /** Changes to the gateway's environment; an empty value unsets. */
  gatewayEnv?: Record<string, string>;
  /** Changes to the control plane's environment (an empty value unsets). */
  controlPlaneEnv?: Record<string, string>;
  /** The key's concurrency ceiling (long-stream runs hold thousands of calls at once). */
  keyConcurrency?: number;
}

export interface BenchStack {
  env: Record<string, string>;
  /** The key's secret. */
  key: string;
  /** Scratch folder of this run (service logs). */
  work: string;
  pidOf(name: 'gateway' | 'control-plane' | 'mock-upstream'): number;
  /** The ledger check and the reservations by status, on the bench database. */
  verifyLedger(): Promise<{ consistent: boolean; problems: string[]; counts: string }>;
  stop(): Promise<void>;
}

/** "K=V,K2=" as an environment change (an empty value unsets). */
export function parseEnvChanges(text: string | undefined): Record<string, string> {
  const changes: Record<string, string> = {};
  for (const pair of (text ?? '').split(',').filter(Boolean)) {
    const [name = '', ...value] = pair.split('=');
    changes[name] = value.join('=');
  }
  return changes;
}

function withChanges(env: Record<string, string>, changes: Record<string, string>): Record<string, string> {
  const result = { ...env };
  for (const [name, value] of Object.entries(changes)) {
    if (value === '') delete result[name];
    else result[name] = value;
  }
  return result;
}

/** The alias of the `routed` row: gpt-mock's calls over two upstreams of equal weight. */
export const ROUTED_ALIAS = 'gpt-mock-routed';

/** The example catalogue plus ROUTED_ALIAS, written into the bench's work folder. */
function benchCatalog(work: string): string {
  const example = readFileSync(path.join(ROOT, 'deploy/catalog.example.yaml'), 'utf8');
  if (!example.includes('\naliases:\n')) throw new Error('the example catalogue has no aliases list');
  const routed = `\naliases:
  - alias: ${ROUTED_ALIAS}
    upstreams:
      - { provider: mock-openai, upstream_model: mock-gpt-1 }
      - { provider: mock-openai, upstream_model: mock-gpt-2 }
    protocols: [chat_completions, responses]
    price: { input: 2, output: 8 }
    default_max_output_tokens: 1024
    max_output_tokens: 16384
`;
  const file = path.join(work, 'catalog.yaml');
  writeFileSync(file, example.replace('\naliases:\n', routed));
  return file;
}

export async function startBenchStack(options: BenchStackOptions): Promise<BenchStack> {
  const work = mkdtempSync(path.join(tmpdir(), 'tollgate-bench-'));
  const databaseName = `tollgate_bench_${randomBytes(4).toString('hex')}`;
  const redisPrefix = `tollgate-bench:${randomBytes(4).toString('hex')}:`;
  const services: Service[] = [];
  const withAdmin = async <T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  };
  const databaseUrl = (() => {
    const url = new URL(options.adminUrl);
    url.pathname = `/${databaseName}`;
    return url.toString();
  })();
  const stop = async () => {
    for (const child of scriptChildren) child.kill('SIGTERM');
    for (const service of services.reverse()) await service.stop().catch(() => {});
    await withAdmin(options.adminUrl, (client) =>
      client.query(`drop database if exists "${databaseName}" with (force)`),
    ).catch(() => {});
    await removeRedisNamespace(options.redisUrl, redisPrefix);
    rmSync(work, { recursive: true, force: true });
  };

  try {
    await withAdmin(options.adminUrl, (client) => client.query(`create database "${databaseName}"`));
    const env: Record<string, string> = {
      INTERNAL_TOKEN_SECRET: randomBytes(32).toString('hex'),
      KEY_PEPPER: randomBytes(32).toString('hex'),
      KEY_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      DATABASE_URL: databaseUrl,
      REDIS_URL: options.redisUrl,
      REDIS_KEY_PREFIX: redisPrefix,
      CATALOG_FILE: benchCatalog(work),
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
      // Every call of a benchmark comes from one address, as through a load balancer.
      HTTP_MAX_CONNECTIONS_PER_ADDRESS: '0',
      ...(options.profileDir ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${options.profileDir}` } : {}),
    };
    services.push(startService('mock-upstream', 'services/mock-upstream', env, work));
    services.push(
      startService(
        'control-plane',
        'services/control-plane',
        withChanges(env, options.controlPlaneEnv ?? {}),
        work,
      ),
    );
    await waitHealthy(`http://127.0.0.1:${PORTS.mock}/health`);
    await waitHealthy(`http://127.0.0.1:${PORTS.controlPlane}/api/v1/health`);
    if (options.instantBilling) {
      startScript(work, 'instant-billing', path.join(ROOT, 'bench'), [
        'src/instant-billing.ts',
        String(PORTS.instantBilling),
        env.CONTROL_PLANE_INTERNAL_URL as string,
      ]);
      await waitListening(PORTS.instantBilling);
    }
    // The gateway runs as deployed (deploy/docker-compose.yml, deploy/kubernetes): Node's defaults.
    const gatewayChanges: Record<string, string> = {
      ...(options.instantBilling
        ? { CONTROL_PLANE_INTERNAL_URL: `http://127.0.0.1:${PORTS.instantBilling}` }
        : {}),
      ...options.gatewayEnv,
    };
    services.push(startService('gateway', 'services/gateway', withChanges(env, gatewayChanges), work));
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
        String(options.keyConcurrency ?? 10_000),
      ),
    ) as { secret: string };
    const pidOf = (name: string) => services.find((service) => service.name === name)!.child.pid!;
    return {
      env,
      key: created.secret,
      work,
      pidOf,
      stop,
      async verifyLedger() {
        const ledger = JSON.parse(
          await run(process.execPath, ['bin/tollgate-admin.ts', 'verify-ledger'], {
            cwd: path.join(ROOT, 'services/control-plane'),
            env,
          }),
        ) as { consistent: boolean; problems: string[] };
        const counts = await withAdmin(databaseUrl, async (client) => {
          const result = await client.query<{ status: string; count: string }>(
            'select status, count(*)::text as count from reservations group by status order by status',
          );
          return result.rows.map((row) => `${row.status} ${row.count}`).join(', ');
        });
        return { ...ledger, counts };
      },
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
