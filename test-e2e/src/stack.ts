/**
 * The e2e stack: mock upstream, control plane and gateway, each its own process started with
 * `node src/main.ts` exactly as an operator runs them, on a fresh database of the test Postgres,
 * a Redis key prefix of its own, random secrets and free ports on 127.0.0.1.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  createRedisNamespace,
  createTestDatabase,
  findFreePort,
  ROOT,
  run,
  type Service,
  startService,
  testSecrets,
  waitHealthy,
} from '@tollgate/test-harness';
import pg from 'pg';
import { inject } from 'vitest';

/** The provider key the mock requires and the gateway sends. */
export const PROVIDER_KEY = 'e2e-provider-credential-5c1f0a9e';

/** Per-token credit prices of the priced aliases, as written in the catalogue below. */
export const PRICES = {
  'claude-e2e': { input: 3n, output: 15n },
  'gpt-e2e': { input: 2n, output: 8n },
} as const;

/** Upstream model ids: the client must only ever see the aliases. */
export const UPSTREAM_MODELS = { claude: 'upstream-claude-e2e-7', gpt: 'upstream-gpt-e2e-3' } as const;

/**
 * Both provider kinds, pointed at the mock. `gpt-tokens-e2e` has no price: only the package's
 * tokens pay for it. `hidden-e2e` is unpublished.
 */
function catalogue(mockUrl: string): string {
  return `
providers:
  - { id: mock-anthropic, kind: anthropic, base_url: "${mockUrl}", credential: MOCK_PROVIDER_KEY }
  - { id: mock-openai, kind: openai, base_url: "${mockUrl}/v1", credential: MOCK_PROVIDER_KEY }
aliases:
  - { alias: claude-e2e, provider: mock-anthropic, upstream_model: ${UPSTREAM_MODELS.claude},
      protocols: [messages, count_tokens], price: { input: 3, output: 15 },
      default_max_output_tokens: 256, max_output_tokens: 4096 }
  - { alias: gpt-e2e, provider: mock-openai, upstream_model: ${UPSTREAM_MODELS.gpt},
      protocols: [chat_completions, responses], price: { input: 2, output: 8 },
      default_max_output_tokens: 256, max_output_tokens: 4096 }
  - { alias: gpt-tokens-e2e, provider: mock-openai, upstream_model: ${UPSTREAM_MODELS.gpt},
      protocols: [chat_completions, responses], default_max_output_tokens: 100, max_output_tokens: 1000 }
  - { alias: hidden-e2e, provider: mock-openai, upstream_model: upstream-hidden, protocols: [chat_completions],
      published: false, price: { input: 1, output: 1 }, default_max_output_tokens: 10, max_output_tokens: 10 }
packages:
  - { id: e2e-tokens, name: E2E tokens, tokens: 50000, validity_days: 30, aliases: [gpt-tokens-e2e],
      max_output_tokens: 2000, requests_per_minute: 1000, concurrency: 50,
      price: { amount: "900", currency: USD, exponent: 2 } }
`;
}

export interface RunningGatewayProcess {
  url: string;
  service: Service;
}

export interface E2EStack {
  gatewayUrl: string;
  controlPlaneUrl: string;
  mockUrl: string;
  /** Direct connection to the control plane's database, for reading reservations and the ledger. */
  db: pg.Pool;
  /** Runs the operator CLI (`tollgate-admin`) with the control plane's environment; parsed JSON. */
  // biome-ignore lint/suspicious/noExplicitAny: each command prints its own JSON document
  admin(...args: string[]): Promise<any>;
  /** Another gateway process on the same control plane and Redis, with extra environment. */
  startGateway(name: string, env?: Record<string, string>): Promise<RunningGatewayProcess>;
  stopControlPlane(): Promise<void>;
  startControlPlane(): Promise<void>;
  close(): Promise<void>;
}

/** `controlPlaneEnv`: extra settings of the control plane (payment providers, for example). */
export async function startStack(
  label: string,
  options: { controlPlaneEnv?: Record<string, string> } = {},
): Promise<E2EStack> {
  const services = inject('testServices');
  const database = await createTestDatabase(services.postgresUrl, `e2e_${label}`);
  const folder = await mkdtemp(path.join(tmpdir(), `tollgate-e2e-${label}-`));
  const running: Service[] = [];
  const db = new pg.Pool({ connectionString: database.url, max: 2 });

  const [mockPort, publicPort, internalPort, gatewayPort] = await Promise.all([
    findFreePort(),
    findFreePort(),
    findFreePort(),
    findFreePort(),
  ]);
  const mockUrl = `http://127.0.0.1:${mockPort}`;
  const controlPlaneUrl = `http://127.0.0.1:${publicPort}`;
  const internalUrl = `http://127.0.0.1:${internalPort}`;
  const catalogFile = path.join(folder, 'catalog.yaml');
  await writeFile(catalogFile, catalogue(mockUrl));

  const secrets = testSecrets();
  const shared = {
    INTERNAL_TOKEN_SECRET: secrets.INTERNAL_TOKEN_SECRET,
    REDIS_URL: services.redisUrl,
    REDIS_KEY_PREFIX: createRedisNamespace(`e2e-${label}`),
    LOG_LEVEL: 'info',
  };
  const controlPlaneEnv = {
    ...shared,
    KEY_PEPPER: secrets.KEY_PEPPER,
    KEY_ENCRYPTION_KEY: secrets.KEY_ENCRYPTION_KEY,
    DATABASE_URL: database.url,
    CATALOG_FILE: catalogFile,
    CONTROL_PLANE_HOST: '127.0.0.1',
    CONTROL_PLANE_PORT: String(publicPort),
    CONTROL_PLANE_INTERNAL_HOST: '127.0.0.1',
    CONTROL_PLANE_INTERNAL_PORT: String(internalPort),
    // Account emails stay in the outbox (and the log); nothing is sent anywhere.
    SMTP_URL: '',
    PUBLIC_URL: '',
    TRUST_PROXY: 'false',
    ...options.controlPlaneEnv,
  };
  const gatewayEnv = (port: number) => ({
    ...shared,
    GATEWAY_HOST: '127.0.0.1',
    GATEWAY_PORT: String(port),
    CONTROL_PLANE_INTERNAL_URL: internalUrl,
    MOCK_PROVIDER_KEY: PROVIDER_KEY,
    // Long rate windows: no test straddles a window boundary.
    LIMIT_WINDOW_SECONDS: '3600',
    SECRETS_FILE: '',
  });

  let controlPlane: Service | null = null;
  async function startControlPlane(): Promise<void> {
    const service = startService('control-plane', 'services/control-plane', controlPlaneEnv, folder);
    running.push(service);
    controlPlane = service;
    await waitHealthy(`${controlPlaneUrl}/api/v1/health`, 60_000, service);
    // The internal billing API listens last: the gateway needs it, so it must answer too.
    await waitHealthy(`${internalUrl}/internal/health`, 10_000, service);
  }

  let gateways = 0;
  async function startGateway(name: string, env: Record<string, string> = {}, port?: number) {
    const chosen = port ?? (await findFreePort());
    gateways += 1;
    const service = startService(
      `gateway-${gateways}-${name}`,
      'services/gateway',
      {
        ...gatewayEnv(chosen),
        ...env,
      },
      folder,
    );
    running.push(service);
    const url = `http://127.0.0.1:${chosen}`;
    await waitHealthy(`${url}/health`, 60_000, service);
    return { url, service };
  }

  async function close(): Promise<void> {
    for (const service of [...running].reverse()) await service.stop();
    await db.end();
    await database.drop();
    // E2E_KEEP_LOGS=1 keeps each service's log (and the catalogue) for a look after the run.
    if (process.env.E2E_KEEP_LOGS) console.info(`e2e logs kept in ${folder}`);
    else await rm(folder, { recursive: true, force: true });
  }

  try {
    const mock = startService(
      'mock-upstream',
      'services/mock-upstream',
      {
        MOCK_UPSTREAM_HOST: '127.0.0.1',
        MOCK_UPSTREAM_PORT: String(mockPort),
        MOCK_UPSTREAM_API_KEY: PROVIDER_KEY,
        LOG_LEVEL: 'warn',
      },
      folder,
    );
    running.push(mock);
    await waitHealthy(`${mockUrl}/health`, 30_000, mock);
    await startControlPlane();
    const gateway = await startGateway('main', {}, gatewayPort);

    return {
      gatewayUrl: gateway.url,
      controlPlaneUrl,
      mockUrl,
      db,
      async admin(...args) {
        const output = await run(process.execPath, ['bin/tollgate-admin.ts', ...args], {
          cwd: path.join(ROOT, 'services/control-plane'),
          env: { ...controlPlaneEnv, LOG_LEVEL: 'warn' },
        });
        return JSON.parse(output);
      },
      startGateway: (name, env) => startGateway(name, env),
      async stopControlPlane() {
        await controlPlane?.stop();
      },
      startControlPlane,
      close,
    };
  } catch (error) {
    await close().catch(() => {});
    throw error;
  }
}
