import { mkdir, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import path from 'node:path';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.ts';

/**
 * Named (prepared) statements straight on the pool, for the two calls on every metered request:
 * planned once per connection, and without the query builder's per-call work.
 */
export interface PreparedQueries {
  run<Row>(name: string, text: string, values: unknown[]): Promise<Row[]>;
}

function preparedOn(pool: pg.Pool): PreparedQueries {
  return {
    async run<Row>(name: string, text: string, values: unknown[]) {
      const result = await pool.query({ name, text, values });
      return result.rows as Row[];
    },
  };
}

export interface DatabaseHandle {
  db: Kysely<Database>;
  prepared: PreparedQueries;
  /** 'postgres' with DATABASE_URL, 'embedded' on PGlite in the data folder. */
  mode: 'postgres' | 'embedded';
  /** The connection pool with DATABASE_URL (for metrics); absent on the embedded database. */
  pool?: pg.Pool;
  close(): Promise<void>;
}

const INT8_OID = 20;

/** int8 columns arrive as bigint, never as a lossy number or a bare string. */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID) return (value: string) => BigInt(value);
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

export function createPool(connectionString: string, max: number): pg.Pool {
  return new pg.Pool({ connectionString, max, types });
}

export async function openDatabase(options: {
  databaseUrl: string | undefined;
  poolSize: number;
  dataDir: string;
}): Promise<DatabaseHandle> {
  if (options.databaseUrl) {
    const pool = createPool(options.databaseUrl, options.poolSize);
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, prepared: preparedOn(pool), mode: 'postgres', pool, close: () => db.destroy() };
  }
  return openEmbedded(options.dataDir);
}

/**
 * Embedded Postgres (PGlite) served on a unix socket in the data folder, reached with the same
 * `pg` driver and Kysely dialect as production, so every query runs the same path. When another
 * process (a running control plane) already serves the folder, this one connects to its socket
 * instead: two processes must never open the same PGlite folder. The socket server runs one
 * query at a time and keeps a transaction on the connection that opened it.
 */
async function openEmbedded(dataDir: string): Promise<DatabaseHandle> {
  const directory = path.resolve(dataDir);
  const socketDirectory = path.join(directory, 'run');
  const socketPath = path.join(socketDirectory, '.s.PGSQL.5432');
  const connect = () =>
    new pg.Pool({ host: socketDirectory, port: 5432, user: 'postgres', database: 'postgres', max: 1, types });

  if (await socketAnswers(socketPath)) {
    const pool = connect();
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, prepared: preparedOn(pool), mode: 'embedded', close: () => db.destroy() };
  }

  const { PGlite } = await import('@electric-sql/pglite');
  const { PGLiteSocketServer } = await import('@electric-sql/pglite-socket');
  await mkdir(path.join(directory, 'pglite'), { recursive: true });
  await mkdir(socketDirectory, { recursive: true });
  await rm(socketPath, { force: true }); // left behind by a process that did not stop cleanly
  const pglite = await PGlite.create(path.join(directory, 'pglite'));
  const server = new PGLiteSocketServer({ db: pglite, path: socketPath, maxConnections: 8 });
  await server.start();
  const pool = connect();
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    prepared: preparedOn(pool),
    mode: 'embedded',
    async close() {
      await db.destroy();
      await server.stop();
      await pglite.close();
    },
  };
}

function socketAnswers(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection(socketPath);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
