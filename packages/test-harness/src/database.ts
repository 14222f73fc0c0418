import { randomBytes } from 'node:crypto';
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
