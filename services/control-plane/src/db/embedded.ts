import { mkdir, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import path from 'node:path';
import pg from 'pg';

/**
 * Embedded Postgres (PGlite) served on a unix socket in the data folder, reached with the same
 * `pg` driver as production. When another process (a running control plane) already serves the
 * folder, this one connects to its socket instead: two processes must never open the same PGlite
 * folder.
 *
 * Unlike Postgres, the socket server runs every client connection on PGlite's one session: what a
 * connection leaves behind (prepared statements, settings) outlives it and is seen by the others.
 * Hence the embedded pool never names its statements (see database.ts). The server queues every
 * connection's messages and keeps a transaction to the connection that opened it.
 */
export interface EmbeddedServer {
  pool: pg.Pool;
  /** Stops the socket server and PGlite when this process runs them; end the pool first. */
  close(): Promise<void>;
}

export function socketDirectoryOf(dataDir: string): string {
  return path.join(path.resolve(dataDir), 'run');
}

export interface EmbeddedOptions {
  /**
   * The control plane owns the folder: it waits this long for another process serving it (a CLI
   * command run while no control plane was up) to finish, then refuses to start rather than
   * depend on a process that is about to exit. Absent: connect to whoever serves it (the CLI).
   */
  ownerWaitMs?: number;
}

export async function openEmbeddedPool(
  dataDir: string,
  poolConfig: Omit<pg.PoolConfig, 'host' | 'port' | 'user' | 'database'>,
  options: EmbeddedOptions = {},
): Promise<EmbeddedServer> {
  const directory = path.resolve(dataDir);
  const socketDirectory = socketDirectoryOf(directory);
  const socketPath = path.join(socketDirectory, '.s.PGSQL.5432');
  const connect = () => {
    const pool = new pg.Pool({
      ...poolConfig,
      host: socketDirectory,
      port: 5432,
      user: 'postgres',
      database: 'postgres',
    });
    // An idle connection ended by the server is dropped by the pool; the next query connects anew.
    pool.on('error', () => {});
    return pool;
  };

  if (options.ownerWaitMs !== undefined) {
    const deadline = Date.now() + options.ownerWaitMs;
    while (await socketAnswers(socketPath)) {
      if (Date.now() >= deadline) {
        throw new Error(
          `the embedded database in ${directory} is served by another process (another control plane, or a tollgate-admin command); stop it first`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } else if (await socketAnswers(socketPath)) {
    return { pool: connect(), close: async () => {} };
  }

  const { PGlite } = await import('@electric-sql/pglite');
  const { PGLiteSocketServer } = await import('@electric-sql/pglite-socket');
  await mkdir(path.join(directory, 'pglite'), { recursive: true });
  await mkdir(socketDirectory, { recursive: true });
  await rm(socketPath, { force: true }); // left behind by a process that did not stop cleanly
  const pglite = await PGlite.create(path.join(directory, 'pglite'));
  const server = new PGLiteSocketServer({ db: pglite, path: socketPath, maxConnections: 8 });
  await server.start();
  return {
    pool: connect(),
    async close() {
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
