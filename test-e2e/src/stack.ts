/**
 * The e2e stack: mock upstream, control plane and gateway, each its own process started with
 * `node src/main.ts` exactly as an operator runs them, on a fresh database of the test Postgres,
 * a Redis key prefix of its own, random secrets and free ports on 127.0.0.1. When the run takes
 * the images path (TOLLGATE_E2E_IMAGES=1, see the harness's containers.ts), stacks that ask for it
 * (`fromImages`) run the three services as containers of the built images instead.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  createRedisNamespace,
  createTestDatabase,
  findFreePort,
  ROOT,
  removeRedisNamespace,
  run,
  type Service,
  type ServiceContainer,
  startService,
  startServiceContainer,
  testSecrets,
  waitHealthy,
} from '@tollgate/test-harness';
import { Redis } from 'ioredis';
import pg from 'pg';
import { inject } from 'vitest';

/** The provider key the mock requires and the gateway sends. */
export const PROVIDER_KEY = 'e2e-provider-credential-5c1f0a9e';
/** The AWS key pair the gateway signs Bedrock calls with: the mock's key is the secret. */
export const AWS_KEY_PAIR = JSON.stringify({
  accessKeyId: 'AKIDE2ETOLLGATE',
  secretAccessKey: PROVIDER_KEY,
  region: 'us-east-1',
});
/** A key pair with another secret: every signature it makes is refused. */
const WRONG_AWS_KEY_PAIR = JSON.stringify({
  accessKeyId: 'AKIDE2ETOLLGATE',
  secretAccessKey: 'not-the-provider-secret',
  region: 'us-east-1',
});

/** Per-token credit prices of the priced aliases, as written in the catalogue below. */
export const PRICES = {
  'claude-e2e': { input: 3n, output: 15n },
  'gpt-e2e': { input: 2n, output: 8n },
  'claude-any-e2e': { input: 3n, output: 15n },
  'gpt-any-e2e': { input: 2n, output: 8n },
  'gpt-azure-any-e2e': { input: 2n, output: 8n },
  'claude-bedrock-any-e2e': { input: 3n, output: 15n },
  'claude-bedrock-badsig-e2e': { input: 3n, output: 15n },
  'gemini-any-e2e': { input: 1n, output: 4n },
  'gemini-badkey-e2e': { input: 1n, output: 4n },
  'claude-vertex-any-e2e': { input: 3n, output: 15n },
  'gemini-vertex-any-e2e': { input: 1n, output: 4n },
} as const;

/** Upstream model ids: the client must only ever see the aliases. */
export const UPSTREAM_MODELS = {
  claude: 'upstream-claude-e2e-7',
  gpt: 'upstream-gpt-e2e-3',
  /** An Azure deployment name and a Bedrock model id (the URL carries them). */
  azure: 'upstream-gpt-deployment-e2e',
  bedrock: 'anthropic.upstream-claude-e2e-v1:0',
  /** A Gemini model id (the URL carries it too). */
  gemini: 'upstream-gemini-e2e-2.5',
  /** Vertex model ids: `claude...` is Anthropic's (rawPredict), any other Google's. */
  vertexClaude: 'claude-upstream-e2e@20250101',
  vertexGemini: 'upstream-gemini-vertex-e2e',
} as const;

const { privateKey: VERTEX_PRIVATE_KEY } = generateKeyPairSync('rsa', { modulusLength: 2048 });

/** The Vertex service account's JSON key; its token endpoint is the mock's. */
function vertexServiceAccount(mockUrl: string): string {
  return JSON.stringify({
    type: 'service_account',
    project_id: 'e2e-project',
    private_key_id: 'e2e-key',
    private_key: VERTEX_PRIVATE_KEY.export({ type: 'pkcs8', format: 'pem' }).toString(),
    client_email: 'tollgate-e2e@e2e-project.iam.gserviceaccount.com',
    token_uri: `${mockUrl}/token`,
  });
}

/**
 * One alias of each provider kind declaring all four protocols: any surface is translated. The
 * Anthropic-kind default max output leaves room for a thinking budget (Codex sends no max).
 */
const ANY_PROTOCOL_ALIASES = `
  - { alias: claude-any-e2e, provider: mock-anthropic, upstream_model: ${UPSTREAM_MODELS.claude},
      protocols: [messages, count_tokens, chat_completions, responses], price: { input: 3, output: 15 },
      default_max_output_tokens: 8192, max_output_tokens: 32000 }
  - { alias: gpt-any-e2e, provider: mock-openai, upstream_model: ${UPSTREAM_MODELS.gpt},
      protocols: [messages, count_tokens, chat_completions, responses], price: { input: 2, output: 8 },
      default_max_output_tokens: 256, max_output_tokens: 32000 }
  - { alias: gpt-azure-any-e2e, provider: mock-azure, upstream_model: ${UPSTREAM_MODELS.azure},
      protocols: [messages, count_tokens, chat_completions, responses], price: { input: 2, output: 8 },
      default_max_output_tokens: 256, max_output_tokens: 32000 }
  - { alias: claude-bedrock-any-e2e, provider: mock-bedrock, upstream_model: "${UPSTREAM_MODELS.bedrock}",
      protocols: [messages, count_tokens, chat_completions, responses], price: { input: 3, output: 15 },
      default_max_output_tokens: 8192, max_output_tokens: 32000 }
  - { alias: claude-bedrock-badsig-e2e, provider: mock-bedrock-badsig, upstream_model: "${UPSTREAM_MODELS.bedrock}",
      protocols: [messages, chat_completions, responses], price: { input: 3, output: 15 },
      default_max_output_tokens: 256, max_output_tokens: 4096 }
  - { alias: gemini-any-e2e, provider: mock-gemini, upstream_model: ${UPSTREAM_MODELS.gemini},
      protocols: [messages, count_tokens, chat_completions, responses], price: { input: 1, output: 4 },
      default_max_output_tokens: 256, max_output_tokens: 32000 }
  - { alias: gemini-badkey-e2e, provider: mock-gemini-badkey, upstream_model: ${UPSTREAM_MODELS.gemini},
      protocols: [messages, chat_completions, responses], price: { input: 1, output: 4 },
      default_max_output_tokens: 256, max_output_tokens: 4096 }
  - { alias: claude-vertex-any-e2e, provider: mock-vertex, upstream_model: "${UPSTREAM_MODELS.vertexClaude}",
      protocols: [messages, count_tokens, chat_completions, responses], price: { input: 3, output: 15 },
      default_max_output_tokens: 8192, max_output_tokens: 32000 }
  - { alias: gemini-vertex-any-e2e, provider: mock-vertex, upstream_model: ${UPSTREAM_MODELS.vertexGemini},
      protocols: [messages, count_tokens, chat_completions, responses], price: { input: 1, output: 4 },
      default_max_output_tokens: 256, max_output_tokens: 32000 }`;

/** The Azure, Bedrock, Gemini and Vertex providers of ANY_PROTOCOL_ALIASES, on the mock's wire formats. */
const ANY_PROTOCOL_PROVIDERS = (mockUrl: string) => `
  - { id: mock-azure, kind: azure-openai, base_url: "${mockUrl}", credential: TOLLGATE_PROVIDER_MOCK_KEY }
  - { id: mock-bedrock, kind: bedrock, base_url: "${mockUrl}", credential: TOLLGATE_PROVIDER_MOCK_AWS }
  - { id: mock-bedrock-badsig, kind: bedrock, base_url: "${mockUrl}", credential: TOLLGATE_PROVIDER_WRONG_AWS }
  - { id: mock-gemini, kind: gemini, base_url: "${mockUrl}", credential: TOLLGATE_PROVIDER_MOCK_KEY }
  - { id: mock-gemini-badkey, kind: gemini, base_url: "${mockUrl}", credential: TOLLGATE_PROVIDER_WRONG_KEY }
  - { id: mock-vertex, kind: vertex, base_url: "${mockUrl}/v1/projects/e2e-project/locations/us-east5",
      credential: TOLLGATE_PROVIDER_MOCK_VERTEX }`;

/**
 * Both provider kinds, pointed at the mock. `gpt-tokens-e2e` has no price: only the package's
 * tokens pay for it. `hidden-e2e` is unpublished. `anyProtocol` adds ANY_PROTOCOL_ALIASES.
 */
function catalogue(mockUrl: string, anyProtocol = false): string {
  return `
credit: { currency: USD, value: "0.000001", top_up: { min: "5.00", max: "500.00" } }
providers:
  - { id: mock-anthropic, kind: anthropic, base_url: "${mockUrl}", credential: TOLLGATE_PROVIDER_MOCK_KEY }
  - { id: mock-openai, kind: openai, base_url: "${mockUrl}/v1", credential: TOLLGATE_PROVIDER_MOCK_KEY }${
    anyProtocol ? ANY_PROTOCOL_PROVIDERS(mockUrl) : ''
  }
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
      published: false, price: { input: 1, output: 1 }, default_max_output_tokens: 10, max_output_tokens: 10 }${
        anyProtocol ? ANY_PROTOCOL_ALIASES : ''
      }
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

/** A mock provider process of its own (e.g. an alias's second upstream). */
export interface RunningMock {
  url: string;
  service: Service;
  /** `kill -9`: no drain, open connections reset; resolves once the process is gone. */
  kill(): Promise<void>;
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
  /**
   * Another mock provider on its own port, requiring the same provider key as the first unless
   * `env` says otherwise (`MOCK_UPSTREAM_API_KEY: ''`: any key).
   */
  startMock(name: string, env?: Record<string, string>): Promise<RunningMock>;
  stopControlPlane(): Promise<void>;
  /** `kill -9` of the control plane: no drain, no goodbye; resolves once the process is gone. */
  killControlPlane(): Promise<void>;
  startControlPlane(): Promise<void>;
  /**
   * Calls of the account the control plane's hot tier holds in Redis: in flight, or finished and
   * not yet written to Postgres (0 without the hot tier). A test reads the ledger once this is 0.
   */
  callsInRedis(accountId: string): Promise<number>;
  /** The ids of those calls. */
  callIdsInRedis(accountId: string): Promise<string[]>;
  /** The Redis hash in which the hot tier keeps the account's calls (hot-store.ts, hotKeys). */
  hotCallsKey(accountId: string): string;
  close(): Promise<void>;
}

export interface StackOptions {
  /**
   * The quick start's defaults: no DATABASE_URL (embedded PGlite in a data folder, served on its
   * unix socket) and no REDIS_URL (in-process limiter and events).
   */
  embedded?: boolean;
  /** Extra control-plane environment, e.g. a short DATABASE_IDLE_TIMEOUT_SECONDS. */
  controlPlaneEnv?: Record<string, string>;
  /**
   * Run the services from the built images when the run takes the images path. Only for stacks
   * that use no process-level control (startGateway, stopControlPlane, signals).
   */
  fromImages?: boolean;
  /** A Redis of the test's own (e.g. one it restarts) instead of the shared test Redis. */
  redisUrl?: string;
  /** Add `claude-any-e2e` and `gpt-any-e2e`, which declare every protocol (translation). */
  anyProtocol?: boolean;
}

export async function startStack(label: string, options: StackOptions = {}): Promise<E2EStack> {
  const underTest = inject('servicesUnderTest');
  if (options.fromImages && underTest.mode === 'images' && !options.embedded) {
    return startContainerStack(label, underTest, options);
  }
  const services = inject('testServices');
  const folder = await mkdtemp(path.join(tmpdir(), `tollgate-e2e-${label}-`));
  const dataDir = path.join(folder, 'data');
  const database = options.embedded
    ? { url: '', drop: async () => {} }
    : await createTestDatabase(services.postgresUrl, `e2e_${label}`, { template: services.templateDatabase });
  const running: Service[] = [];
  // On the embedded database the tests read through the control plane's socket, as the CLI does.
  const db = options.embedded
    ? new pg.Pool({
        host: path.join(dataDir, 'run'),
        port: 5432,
        user: 'postgres',
        database: 'postgres',
        max: 1,
      })
    : new pg.Pool({ connectionString: database.url, max: 2 });
  // An idle connection ends when its server stops (the control plane, on the embedded database).
  db.on('error', () => {});

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
  await writeFile(catalogFile, catalogue(mockUrl, options.anyProtocol));

  const secrets = testSecrets();
  const shared = {
    INTERNAL_TOKEN_SECRET: secrets.INTERNAL_TOKEN_SECRET,
    REDIS_URL: options.embedded ? '' : (options.redisUrl ?? services.redisUrl),
    REDIS_KEY_PREFIX: createRedisNamespace(`e2e-${label}`),
    LOG_LEVEL: 'info',
  };
  const controlPlaneEnv = {
    ...shared,
    KEY_PEPPER: secrets.KEY_PEPPER,
    KEY_ENCRYPTION_KEY: secrets.KEY_ENCRYPTION_KEY,
    DATABASE_URL: database.url,
    DATA_DIR: dataDir,
    CATALOG_FILE: catalogFile,
    CONTROL_PLANE_HOST: '127.0.0.1',
    CONTROL_PLANE_PORT: String(publicPort),
    CONTROL_PLANE_INTERNAL_HOST: '127.0.0.1',
    CONTROL_PLANE_INTERNAL_PORT: String(internalPort),
    // Account emails stay in the outbox (and the log); nothing is sent anywhere.
    SMTP_URL: '',
    PUBLIC_URL: '',
    TRUST_PROXY: 'false',
    // The admin's provider test calls go through the main gateway.
    GATEWAY_INTERNAL_URL: `http://127.0.0.1:${gatewayPort}`,
    ...options.controlPlaneEnv,
  };
  const gatewayEnv = (port: number) => ({
    ...shared,
    GATEWAY_HOST: '127.0.0.1',
    GATEWAY_PORT: String(port),
    CONTROL_PLANE_INTERNAL_URL: internalUrl,
    TOLLGATE_PROVIDER_MOCK_KEY: PROVIDER_KEY,
    TOLLGATE_PROVIDER_MOCK_AWS: AWS_KEY_PAIR,
    TOLLGATE_PROVIDER_WRONG_AWS: WRONG_AWS_KEY_PAIR,
    TOLLGATE_PROVIDER_WRONG_KEY: 'not-the-provider-key',
    TOLLGATE_PROVIDER_MOCK_VERTEX: vertexServiceAccount(mockUrl),
    // Long rate windows: no test straddles a window boundary.
    LIMIT_WINDOW_SECONDS: '3600',
    // Settlements a gateway keeps across restarts stay with this stack, like its Redis prefix.
    GATEWAY_DATA_DIR: path.join(folder, 'gateway-data'),
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

  async function startMock(name: string, env: Record<string, string> = {}): Promise<RunningMock> {
    const port = await findFreePort();
    const service = startService(
      `mock-upstream-${name}`,
      'services/mock-upstream',
      {
        MOCK_UPSTREAM_HOST: '127.0.0.1',
        MOCK_UPSTREAM_PORT: String(port),
        MOCK_UPSTREAM_API_KEY: PROVIDER_KEY,
        LOG_LEVEL: 'warn',
        ...env,
      },
      folder,
    );
    running.push(service);
    const url = `http://127.0.0.1:${port}`;
    await waitHealthy(`${url}/health`, 30_000, service);
    return { url, service, kill: () => killService(service) };
  }

  const redis = shared.REDIS_URL ? new Redis(shared.REDIS_URL, { lazyConnect: true }) : null;
  redis?.on('error', () => {});

  async function close(): Promise<void> {
    for (const service of [...running].reverse()) await service.stop();
    redis?.disconnect();
    if (shared.REDIS_URL) await removeRedisNamespace(shared.REDIS_URL, shared.REDIS_KEY_PREFIX);
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
      startMock,
      async stopControlPlane() {
        await controlPlane?.stop();
      },
      async killControlPlane() {
        // Assigned by startControlPlane: typed wider than the `null` it starts as.
        const service: Service | null = controlPlane;
        if (service) await killService(service);
      },
      startControlPlane,
      callsInRedis: async (accountId) =>
        (await callIdsInRedis(redis, shared.REDIS_KEY_PREFIX, accountId)).length,
      callIdsInRedis: (accountId) => callIdsInRedis(redis, shared.REDIS_KEY_PREFIX, accountId),
      hotCallsKey: (accountId) => hotCallsKey(shared.REDIS_KEY_PREFIX, accountId),
      close,
    };
  } catch (error) {
    await close().catch(() => {});
    throw error;
  }
}

/** `kill -9` of a service: resolves once the process is gone. */
async function killService(service: Service): Promise<void> {
  if (service.exited) return;
  const ended = once(service.child, 'exit');
  service.child.kill('SIGKILL');
  await ended;
}

const hotCallsKey = (prefix: string, accountId: string) => `${prefix}hot:{a:${accountId}}:calls`;

/** See E2EStack.callsInRedis. */
async function callIdsInRedis(redis: Redis | null, prefix: string, accountId: string): Promise<string[]> {
  if (!redis) return [];
  // In flight (R) or finished and not yet forgotten (D); tombstones (G) hold nothing.
  const calls = await redis.hgetall(hotCallsKey(prefix, accountId));
  return Object.entries(calls)
    .filter(([, call]) => !call.startsWith('G'))
    .map(([id]) => id);
}

/** In-container ports: fixed, since each service has its own network address. */
const PORTS = { mock: 8090, public: 8081, internal: 8082, gateway: 8080 };

/**
 * The same stack from the built images: three containers on the network of the Postgres and
 * Redis containers, reached by the tests through their published ports. The operator CLI runs
 * inside the control-plane container, as in the compose deployment.
 */
async function startContainerStack(
  label: string,
  underTest: Extract<ReturnType<typeof inject<'servicesUnderTest'>>, { mode: 'images' }>,
  options: StackOptions,
): Promise<E2EStack> {
  const services = inject('testServices');
  const folder = await mkdtemp(path.join(tmpdir(), `tollgate-e2e-${label}-`));
  const database = await createTestDatabase(services.postgresUrl, `e2e_${label}`, {
    template: services.templateDatabase,
  });
  const db = new pg.Pool({ connectionString: database.url, max: 2 });
  db.on('error', () => {});
  const running: ServiceContainer[] = [];
  // Names on the shared network: unique per stack, so files never reach each other's services.
  const suffix = `${label}-${randomBytes(3).toString('hex')}`;
  const alias = { mock: `mock-${suffix}`, controlPlane: `cp-${suffix}`, gateway: `gw-${suffix}` };
  const networkDatabaseUrl = new URL(underTest.postgresUrl);
  networkDatabaseUrl.pathname = `/${database.name}`;

  const secrets = testSecrets();
  const shared = {
    INTERNAL_TOKEN_SECRET: secrets.INTERNAL_TOKEN_SECRET,
    REDIS_URL: underTest.redisUrl,
    REDIS_KEY_PREFIX: createRedisNamespace(`e2e-${label}`),
    LOG_LEVEL: 'info',
  };

  const redis = new Redis(services.redisUrl, { lazyConnect: true });
  redis.on('error', () => {});

  async function close(): Promise<void> {
    for (const service of [...running].reverse()) await service.stop().catch(() => {});
    redis.disconnect();
    await db.end();
    await database.drop();
    if (process.env.E2E_KEEP_LOGS) console.info(`e2e logs kept in ${folder}`);
    else await rm(folder, { recursive: true, force: true });
  }

  try {
    // The control plane needs only the mock's name (for its catalogue), so the two start together.
    const starting = [
      startServiceContainer({
        name: 'mock-upstream',
        image: underTest.images.mockUpstream,
        network: underTest.network,
        alias: alias.mock,
        env: {
          MOCK_UPSTREAM_HOST: '0.0.0.0',
          MOCK_UPSTREAM_PORT: String(PORTS.mock),
          MOCK_UPSTREAM_API_KEY: PROVIDER_KEY,
          LOG_LEVEL: 'warn',
        },
        health: [{ port: PORTS.mock, path: '/health' }],
        logDir: folder,
      }),
      startServiceContainer({
        name: 'control-plane',
        image: underTest.images.controlPlane,
        network: underTest.network,
        alias: alias.controlPlane,
        env: {
          ...shared,
          KEY_PEPPER: secrets.KEY_PEPPER,
          KEY_ENCRYPTION_KEY: secrets.KEY_ENCRYPTION_KEY,
          DATABASE_URL: networkDatabaseUrl.toString(),
          CATALOG_FILE: '/catalog/catalog.yaml',
          CONTROL_PLANE_HOST: '0.0.0.0',
          CONTROL_PLANE_PORT: String(PORTS.public),
          CONTROL_PLANE_INTERNAL_HOST: '0.0.0.0',
          CONTROL_PLANE_INTERNAL_PORT: String(PORTS.internal),
          SMTP_URL: '',
          PUBLIC_URL: '',
          TRUST_PROXY: 'false',
          ...options.controlPlaneEnv,
        },
        files: [
          {
            content: catalogue(`http://${alias.mock}:${PORTS.mock}`, options.anyProtocol),
            target: '/catalog/catalog.yaml',
          },
        ],
        health: [
          { port: PORTS.public, path: '/api/v1/health' },
          { port: PORTS.internal, path: '/internal/health' },
        ],
        logDir: folder,
      }),
    ];
    const started = await Promise.allSettled(starting);
    for (const result of started) if (result.status === 'fulfilled') running.push(result.value);
    const failed = started.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
    const [mock, controlPlane] = running as [ServiceContainer, ServiceContainer];

    const gateway = await startServiceContainer({
      name: 'gateway-1-main',
      image: underTest.images.gateway,
      network: underTest.network,
      alias: alias.gateway,
      env: {
        ...shared,
        GATEWAY_HOST: '0.0.0.0',
        GATEWAY_PORT: String(PORTS.gateway),
        CONTROL_PLANE_INTERNAL_URL: `http://${alias.controlPlane}:${PORTS.internal}`,
        TOLLGATE_PROVIDER_MOCK_KEY: PROVIDER_KEY,
        TOLLGATE_PROVIDER_MOCK_AWS: AWS_KEY_PAIR,
        TOLLGATE_PROVIDER_WRONG_AWS: WRONG_AWS_KEY_PAIR,
        TOLLGATE_PROVIDER_WRONG_KEY: 'not-the-provider-key',
        TOLLGATE_PROVIDER_MOCK_VERTEX: vertexServiceAccount(`http://${alias.mock}:${PORTS.mock}`),
        LIMIT_WINDOW_SECONDS: '3600',
        SECRETS_FILE: '',
      },
      health: [{ port: PORTS.gateway, path: '/health' }],
      logDir: folder,
    });
    running.push(gateway);

    const processOnly = (what: string) => () => {
      throw new Error(`${what} needs the services as processes; this stack runs from images`);
    };
    return {
      gatewayUrl: gateway.url(PORTS.gateway),
      controlPlaneUrl: controlPlane.url(PORTS.public),
      mockUrl: mock.url(PORTS.mock),
      db,
      async admin(...args) {
        const result = await controlPlane.container.exec(['node', 'bin/tollgate-admin.ts', ...args], {
          env: { LOG_LEVEL: 'warn' },
        });
        if (result.exitCode !== 0) {
          throw new Error(
            `tollgate-admin ${args.join(' ')} failed (${result.exitCode}): ${result.stderr.trim()}`,
          );
        }
        return JSON.parse(result.stdout);
      },
      startGateway: processOnly('startGateway'),
      startMock: processOnly('startMock'),
      stopControlPlane: processOnly('stopControlPlane'),
      killControlPlane: processOnly('killControlPlane'),
      startControlPlane: processOnly('startControlPlane'),
      // The containers' Redis is the test Redis, which this process reaches on its published port.
      callsInRedis: async (accountId) =>
        (await callIdsInRedis(redis, shared.REDIS_KEY_PREFIX, accountId)).length,
      callIdsInRedis: (accountId) => callIdsInRedis(redis, shared.REDIS_KEY_PREFIX, accountId),
      hotCallsKey: (accountId) => hotCallsKey(shared.REDIS_KEY_PREFIX, accountId),
      close,
    };
  } catch (error) {
    await close().catch(() => {});
    throw error;
  }
}
