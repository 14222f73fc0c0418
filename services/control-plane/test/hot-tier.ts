/** Fixture of the hot-tier tests: a control plane with the hot tier on, its internal API and Redis. */
import { Redis } from 'ioredis';
import { internalApi, seedCatalog } from './billing.ts';
import { createTestContext, type TestContext } from './context.ts';

export interface HotTierFixture {
  context: TestContext;
  /** The internal billing API, as gateways call it. */
  api: ReturnType<typeof internalApi>;
  /** A client of the hot tier's Redis, to read what the tier holds. */
  redis: Redis;
}

/** A database named `name` with the test catalogue, the hot tier on (with `env` set). */
export async function createHotTierFixture(
  name: string,
  env: Record<string, string> = {},
): Promise<HotTierFixture> {
  const context = await createTestContext(name, env, { hotTier: true });
  await seedCatalog(context);
  return { context, api: internalApi(context), redis: new Redis(context.redisUrl) };
}

export async function closeHotTierFixture(fixture: Pick<HotTierFixture, 'context' | 'redis'>): Promise<void> {
  fixture.redis.disconnect();
  await fixture.context.close();
}
