import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';

export interface TestDatabase {
  /** Connection URL of the new database. */
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

function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

function safe(label: string): string {
  return label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .slice(0, 24);
}

/** Sessions still open on a database (a pool's end() resolves before its sockets are closed). */
async function waitForNoSessions(client: pg.Client, name: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const { rows } = await client.query<{ sessions: number }>(
      'select count(*)::int as sessions from pg_stat_activity where datname = $1',
      [name],
    );
    if (rows[0]?.sessions === 0) return;
    // Postgres announces no session's end: poll the server's own view of them.
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function dropper(adminUrl: string, name: string): () => Promise<void> {
  return () =>
    withAdmin(adminUrl, async (client) => {
      // Forcing the drop while a pool's sockets are closing would kill a closing session and
      // surface as an error in the test that owned it: give them a moment to go first.
      await waitForNoSessions(client, name, 3_000);
      await client.query(`drop database if exists "${name}" with (force)`);
    });
}

/**
 * A fresh database on the test server, for one test file. Never depends on leftovers. With
 * `template`, a copy of that database (see createTemplateDatabase); otherwise empty.
 */
export async function createTestDatabase(
  adminUrl: string,
  label = 'test',
  options: { template?: string } = {},
): Promise<TestDatabase> {
  const name = `tollgate_${safe(label)}_${randomBytes(5).toString('hex')}`;
  const from = options.template ? ` template "${options.template}"` : '';
  await withAdmin(adminUrl, (client) => client.query(`create database "${name}"${from}`));
  return { url: databaseUrl(adminUrl, name), name, drop: dropper(adminUrl, name) };
}

/**
 * A database prepared once per run (`prepare` gets its URL, e.g. to run the migrations), from
 * which test databases are copied with `createTestDatabase(url, label, { template: name })`.
 * Named by a run id of its own, so concurrent runs on one server never share one. Postgres copies
 * a database only while nobody is connected to it: `prepare` must close its connections, and this
 * waits until the server has seen them go.
 */
export async function createTemplateDatabase(
  adminUrl: string,
  label: string,
  prepare: (url: string) => Promise<void>,
): Promise<TestDatabase> {
  const name = `tollgate_template_${safe(label)}_${process.pid}_${randomBytes(4).toString('hex')}`;
  await withAdmin(adminUrl, (client) => client.query(`create database "${name}"`));
  const template = { url: databaseUrl(adminUrl, name), name, drop: dropper(adminUrl, name) };
  try {
    await prepare(template.url);
    await withAdmin(adminUrl, (client) => waitForNoSessions(client, name, 10_000));
  } catch (error) {
    await template.drop().catch(() => {});
    throw error;
  }
  return template;
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
