import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { openEmbeddedPool } from './embedded.ts';
import type { Database } from './schema.ts';

/**
 * The two calls on every metered request go straight to the pool, without the query builder's
 * per-call work. On Postgres they are named (prepared) statements, planned once per connection.
 */
export interface PreparedQueries {
  run<Row>(name: string, text: string, values: unknown[]): Promise<Row[]>;
}

/**
 * `named: false` on the embedded database: its one session outlives each connection, so a new
 * connection preparing the same name again would fail with "already exists".
 */
function preparedOn(pool: pg.Pool, named: boolean): PreparedQueries {
  return {
    async run<Row>(name: string, text: string, values: unknown[]) {
      const result = await pool.query(named ? { name, text, values } : { text, values });
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

export function createPool(connectionString: string, max: number, idleTimeoutMillis?: number): pg.Pool {
  return keepAlive(
    new pg.Pool({ connectionString, max, types, ...(idleTimeoutMillis ? { idleTimeoutMillis } : {}) }),
  );
}

/**
 * An idle connection the server ends (a restart, the embedded server stopping) is an 'error' on
 * the pool, fatal to the process unless handled. The pool drops it; the next query connects anew.
 */
function keepAlive(pool: pg.Pool): pg.Pool {
  pool.on('error', () => {});
  return pool;
}

export async function openDatabase(options: {
  databaseUrl: string | undefined;
  poolSize: number;
  dataDir: string;
  /** How long a pooled connection may stay idle before it is closed; pg's default when absent. */
  idleTimeoutMs?: number;
  /** The control plane: owns the embedded folder (see openEmbeddedPool). */
  embeddedOwnerWaitMs?: number;
}): Promise<DatabaseHandle> {
  if (options.databaseUrl) {
    const pool = createPool(options.databaseUrl, options.poolSize, options.idleTimeoutMs);
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, prepared: preparedOn(pool, true), mode: 'postgres', pool, close: () => db.destroy() };
  }
  // One connection: the socket server runs one query at a time on one session anyway.
  const embedded = await openEmbeddedPool(
    options.dataDir,
    { max: 1, types, ...(options.idleTimeoutMs ? { idleTimeoutMillis: options.idleTimeoutMs } : {}) },
    options.embeddedOwnerWaitMs === undefined ? {} : { ownerWaitMs: options.embeddedOwnerWaitMs },
  );
  // Kysely ends the pool on destroy; the server (when this process runs it) stops after.
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: embedded.pool }) });
  return {
    db,
    prepared: preparedOn(embedded.pool, false),
    mode: 'embedded',
    async close() {
      await db.destroy();
      await embedded.close();
    },
  };
}
