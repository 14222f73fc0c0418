/**
 * Test stack for gateway service tests: the real control plane (fresh database on the test
 * Postgres, real migrations, catalogue synced), the mock upstream and one or more gateways, each
 * on 127.0.0.1:0, sharing a Redis key prefix of their own. Used by *.test.ts files only.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { loadConfig as loadControlPlaneConfig } from '@tollgate/control-plane/config';
import {
  balancesOf,
  changeCredit,
  createAccount,
  createKey,
  grantPackage,
  type RunningControlPlane,
  reservationsOf,
  startControlPlane,
  verifyLedger,
} from '@tollgate/control-plane/test-kit';
import { type RunningMockUpstream as MockUpstream, startMockUpstream } from '@tollgate/mock-upstream';
import { createLogger } from '@tollgate/service-kit';
import {
  createRedisNamespace,
  createTestDatabase,
  removeRedisNamespace,
  testSecrets,
} from '@tollgate/test-harness';
import { inject } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { type RunningGateway, startGateway } from '../src/server.ts';

export const STACK_CATALOG = (mockUrl: string) => `
providers:
  - { id: mock-anthropic, kind: anthropic, base_url: "${mockUrl}", credential: TOLLGATE_PROVIDER_MOCK_KEY }
  - { id: mock-openai, kind: openai, base_url: "${mockUrl}/v1", credential: TOLLGATE_PROVIDER_MOCK_KEY }
aliases:
  - { alias: claude-test, provider: mock-anthropic, upstream_model: upstream-claude-x1, protocols: [messages, count_tokens],
      price: { input: 3, output: 15 }, default_max_output_tokens: 256, max_output_tokens: 4096 }
  - { alias: gpt-test, provider: mock-openai, upstream_model: upstream-gpt-y2, protocols: [chat_completions, responses],
      price: { input: 2, output: 8 }, default_max_output_tokens: 256, max_output_tokens: 4096 }
  - { alias: claude-all, provider: mock-anthropic, upstream_model: upstream-claude-x1,
      protocols: [messages, count_tokens, chat_completions, responses],
      price: { input: 3, output: 15 }, package_rate: 5, default_max_output_tokens: 256, max_output_tokens: 4096 }
  - { alias: gpt-all, provider: mock-openai, upstream_model: upstream-gpt-y2,
      protocols: [messages, count_tokens, chat_completions, responses],
      price: { input: 2, output: 8 }, default_max_output_tokens: 256, max_output_tokens: 4096 }
  - { alias: tokens-test, provider: mock-openai, upstream_model: upstream-gpt-y2, protocols: [chat_completions],
      default_max_output_tokens: 100, max_output_tokens: 1000 }
  - { alias: hidden-test, provider: mock-openai, upstream_model: upstream-gpt-hidden, protocols: [chat_completions],
      published: false, price: { input: 1, output: 1 }, default_max_output_tokens: 10, max_output_tokens: 10 }
packages:
  - { id: pro, name: Pro, tokens: 100000, validity_days: 30, max_output_tokens: 2000, requests_per_minute: 1000,
      concurrency: 50, price: { amount: "1000", currency: USD, exponent: 2 } }
`;

/** The provider key the mock expects and the gateway sends; must never reach a client. */
export const PROVIDER_KEY = 'provider-secret-value-0123456789';

export interface StackOptions {
  gateways?: number;
  /** The catalogue file for the mock's URL; default STACK_CATALOG. */
  catalog?: (mockUrl: string) => string;
  /** The key the mock requires (default PROVIDER_KEY); null: any credential, or none, is taken. */
  mockApiKey?: string | null;
  gatewayEnv?: Record<string, string>;
  controlPlaneEnv?: Record<string, string>;
}

export interface TestStack {
  controlPlane: RunningControlPlane;
  gateways: RunningGateway[];
  gatewayUrl: string;
  mock: MockUpstream;
  redisUrl: string;
  redisPrefix: string;
  /** Every gateway log line, for scanning. */
  gatewayLogs: string[];
  createFundedKey(options?: {
    packages?: string[];
    credits?: bigint;
    scope?: string[];
    limits?: Partial<{
      maxRequestBytes: number;
      maxOutputTokens: number;
      requestsPerMinute: number;
      concurrency: number;
    }>;
  }): Promise<{ secret: string; keyId: string; accountId: string }>;
  /**
   * Resolves once every invalidation event published so far has reached these gateways (default:
   * the stack's). A key's setup publishes events that drop it from the key cache; landing late, they
   * would drop a key a test has just cached.
   */
  eventsDelivered(gateways?: RunningGateway[]): Promise<void>;
  /** Waits until every gateway has delivered its queued settles/releases/holds. */
  settled(): Promise<void>;
  balances(accountId: string): ReturnType<typeof balancesOf>;
  reservations(accountId: string): ReturnType<typeof reservationsOf>;
  ledgerProblems(): Promise<string[]>;
  close(): Promise<void>;
}

export async function startTestStack(label: string, options: StackOptions = {}): Promise<TestStack> {
  const services = inject('testServices');
  const database = await createTestDatabase(services.postgresUrl, label, {
    template: services.templateDatabase,
  });
  const redisPrefix = createRedisNamespace(label);
  const secrets = testSecrets();
  const mockApiKey = options.mockApiKey === undefined ? PROVIDER_KEY : options.mockApiKey;
  const mock = await startMockUpstream(mockApiKey === null ? {} : { expectedApiKey: mockApiKey });
  const folder = await mkdtemp(path.join(tmpdir(), 'tollgate-stack-'));
  const catalogFile = path.join(folder, 'catalog.yaml');
  await writeFile(catalogFile, (options.catalog ?? STACK_CATALOG)(mock.url));

  const quiet = createLogger({ name: 'control-plane', level: 'warn' });
  const controlPlane = await startControlPlane(
    loadControlPlaneConfig({
      ...secrets,
      DATABASE_URL: database.url,
      REDIS_URL: services.redisUrl,
      REDIS_KEY_PREFIX: redisPrefix,
      CONTROL_PLANE_PORT: '0',
      CONTROL_PLANE_HOST: '127.0.0.1',
      CONTROL_PLANE_INTERNAL_PORT: '0',
      CATALOG_FILE: catalogFile,
      ...options.controlPlaneEnv,
    }),
    { logger: quiet },
  );

  const gatewayLogs: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      gatewayLogs.push(String(chunk));
      callback();
    },
  });
  const gateways: RunningGateway[] = [];
  for (let index = 0; index < (options.gateways ?? 1); index += 1) {
    const config = loadConfig({
      INTERNAL_TOKEN_SECRET: secrets.INTERNAL_TOKEN_SECRET,
      CONTROL_PLANE_INTERNAL_URL: controlPlane.internalServer.url,
      GATEWAY_PORT: '0',
      GATEWAY_HOST: '127.0.0.1',
      REDIS_URL: services.redisUrl,
      REDIS_KEY_PREFIX: redisPrefix,
      TOLLGATE_PROVIDER_MOCK_KEY: PROVIDER_KEY,
      // Long windows: a test never straddles a window boundary.
      LIMIT_WINDOW_SECONDS: '3600',
      // Settlements a gateway keeps at a stop stay with this stack, never with another test file's.
      GATEWAY_DATA_DIR: path.join(folder, 'gateway-data'),
      ...options.gatewayEnv,
    });
    gateways.push(
      await startGateway(config, { logger: createLogger({ name: 'gateway', level: 'debug', destination }) }),
    );
  }
  await Promise.all(gateways.map((gateway) => gateway.deps.catalog.ready()));
  const { deps } = controlPlane;

  async function eventsDelivered(targets = gateways): Promise<void> {
    // Redis hands one connection's messages to a subscriber in order: a marker published after the
    // events has reached a gateway only after they have. Markers repeat, as a subscription still
    // being made would miss the first.
    const markers = new Set<string>();
    const stops: Array<() => void> = [];
    const seen = Promise.all(
      targets.map(
        (gateway) =>
          new Promise<void>((resolve) => {
            stops.push(
              onAccountEvent(gateway, (accountId) => {
                if (markers.has(accountId)) resolve();
              }),
            );
          }),
      ),
    );
    const deadline = Date.now() + 5_000;
    try {
      for (;;) {
        if (Date.now() > deadline) throw new Error('invalidation events did not reach every gateway');
        const marker = randomUUID();
        markers.add(marker);
        await deps.events.publish({ type: 'account.changed', accountId: marker });
        // Not a wait for the events: how long before publishing the marker again.
        const waited = new Promise<false>((resolve) => setTimeout(() => resolve(false), 200));
        if (await Promise.race([seen.then(() => true), waited])) return;
      }
    } finally {
      for (const stop of stops) stop();
    }
  }

  return {
    controlPlane,
    gateways,
    gatewayUrl: gateways[0]!.server.url,
    mock,
    redisUrl: services.redisUrl,
    redisPrefix,
    gatewayLogs,
    async createFundedKey(funding = {}) {
      const account = await createAccount(deps.db, {
        email: `gw-${randomUUID()}@example.test`,
        passwordHash: 'unused',
        displayName: null,
      });
      const { key, secret } = await createKey(deps, account.id, {
        name: 'test',
        scope: funding.scope ?? null,
        ...(funding.limits ? { limits: funding.limits } : {}),
      });
      for (const packageId of funding.packages ?? []) {
        await grantPackage(deps, { accountId: account.id, packageId, cause: 'test' });
      }
      if (funding.credits) {
        await changeCredit(deps, {
          accountId: account.id,
          amount: funding.credits,
          kind: 'grant',
          cause: 'test',
        });
      }
      await eventsDelivered();
      return { secret, keyId: key.id, accountId: account.id };
    },
    eventsDelivered,
    async settled() {
      for (const gateway of gateways) {
        if (!(await gateway.drainBilling(10_000))) throw new Error('settlements did not drain');
      }
    },
    balances: (accountId) => balancesOf(deps, accountId),
    reservations: (accountId) => reservationsOf(deps.db, accountId),
    ledgerProblems: () => verifyLedger(deps.db),
    async close() {
      for (const gateway of gateways) await gateway.close();
      await controlPlane.close();
      await mock.close();
      await database.drop();
      await removeRedisNamespace(services.redisUrl, redisPrefix);
    },
  };
}

const accountListeners = new WeakMap<RunningGateway, Set<(accountId: string) => void>>();

/**
 * Calls `listener` with every account.changed event the gateway handles, until the returned stop
 * is called. Wraps the key cache's dropAccount, which the gateway's event subscriber calls.
 */
function onAccountEvent(gateway: RunningGateway, listener: (accountId: string) => void): () => void {
  let listeners = accountListeners.get(gateway);
  if (!listeners) {
    const all = new Set<(accountId: string) => void>();
    const keys = gateway.deps.keys;
    const dropAccount = keys.dropAccount;
    keys.dropAccount = (accountId) => {
      dropAccount(accountId);
      for (const each of all) each(accountId);
    };
    accountListeners.set(gateway, all);
    listeners = all;
  }
  listeners.add(listener);
  const registered = listeners;
  return () => registered.delete(listener);
}
