import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';

export interface TestDatabase {
  /** Connection URL of the new, empty database. */
  url: string;
  name: string;
  /** Drops the database, closing any connection still open on it. */
  drop(): Promise<void>;
}

async function withAdmin<T>(adminUrl: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** A fresh database on the test server, for one test file. Never depends on leftovers. */
export async function createTestDatabase(adminUrl: string, label = 'test'): Promise<TestDatabase> {
  const safeLabel = label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .slice(0, 24);
  const name = `tollgate_${safeLabel}_${randomBytes(5).toString('hex')}`;
  await withAdmin(adminUrl, (client) => client.query(`create database "${name}"`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: () =>
      withAdmin(adminUrl, async (client) => {
        // A pool's end() resolves before its sockets are closed; forcing the drop at that moment
        // would kill a closing session and surface as an error in the test that owned it.
        const deadline = Date.now() + 3_000;
        while (Date.now() < deadline) {
          const { rows } = await client.query<{ sessions: number }>(
            'select count(*)::int as sessions from pg_stat_activity where datname = $1',
            [name],
          );
          if (rows[0]?.sessions === 0) break;
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
        await client.query(`drop database if exists "${name}" with (force)`);
      }),
  };
}

/** A key prefix no other test file shares, so Redis state never leaks between files. */
export function createRedisNamespace(label = 'test'): string {
  return `tollgate-test:${label}:${randomBytes(5).toString('hex')}:`;
}

/**
 * Removes every key of a namespace, so a run leaves nothing behind in a shared Redis (the hot
 * tier's call hashes have no expiry). Best effort: a Redis that is gone has nothing to remove.
 */
export async function removeRedisNamespace(redisUrl: string, prefix: string): Promise<void> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 2_000 });
  redis.on('error', () => {});
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.unlink(...keys);
      cursor = next;
    } while (cursor !== '0');
  } catch {
    // Nothing to remove where Redis does not answer.
  } finally {
    redis.disconnect();
  }
}
