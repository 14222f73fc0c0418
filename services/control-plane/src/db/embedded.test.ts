/**
 * The embedded database as the control plane and the CLI use it: one process serves PGlite on a
 * unix socket, others connect to it, and all of them share PGlite's one session.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DatabaseHandle, openDatabase } from './database.ts';

const IDLE_MS = 200;
let folder: string;
let server: DatabaseHandle;

beforeAll(async () => {
  folder = await mkdtemp(path.join(tmpdir(), 'tollgate-embedded-'));
  server = await openDatabase({
    databaseUrl: undefined,
    poolSize: 10,
    dataDir: folder,
    idleTimeoutMs: IDLE_MS,
  });
});

afterAll(async () => {
  await server?.close();
  await rm(folder, { recursive: true, force: true });
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('embedded database', () => {
  it('runs the same statement after the pool dropped its idle connection and connected again', async () => {
    const run = () =>
      server.prepared.run<{ n: number }>('tollgate_test_add', 'select $1::int + 1 as n', [41]);
    expect(await run()).toEqual([{ n: 42 }]);
    // Real time: the pool's idle timeout closes the connection.
    await pause(IDLE_MS * 3);
    expect(await run()).toEqual([{ n: 42 }]);
    // Real time: the idle timeout again, on the new connection.
    await pause(IDLE_MS * 3);
    expect(await run()).toEqual([{ n: 42 }]);
  });

  it('keeps the statements of connections sharing the socket apart', async () => {
    // A second process (the CLI) connects to the socket of the running one.
    const client = await openDatabase({ databaseUrl: undefined, poolSize: 2, dataDir: folder });
    try {
      expect(client.mode).toBe('embedded');
      // Different statements on each side: a Bind that reached the other's statement shows.
      const onServer = (value: number) =>
        server.prepared.run('tollgate_test_a', 'select $1::int as n, $2::text as label', [
          value,
          `v${value}`,
        ]);
      const onClient = (value: number) =>
        client.prepared.run('tollgate_test_b', "select $1::text as label, 'b' as side", [`v${value}`]);
      const calls = Array.from({ length: 200 }, (_, index) =>
        index % 2 ? onServer(index) : onClient(index),
      );
      const results = await Promise.all(calls);
      results.forEach((rows, index) => {
        expect(rows).toEqual([
          index % 2 ? { n: index, label: `v${index}` } : { label: `v${index}`, side: 'b' },
        ]);
      });
    } finally {
      await client.close();
    }
  });

  it('lets no second owner (a control plane) attach to a folder another process serves', async () => {
    const owner = openDatabase({
      databaseUrl: undefined,
      poolSize: 1,
      dataDir: folder,
      embeddedOwnerWaitMs: 300,
    });
    await expect(owner).rejects.toThrow(/served by another process/);
    // Once the serving process is gone, the owner serves the folder itself.
    const other = await mkdtemp(path.join(tmpdir(), 'tollgate-embedded-owner-'));
    try {
      const first = await openDatabase({ databaseUrl: undefined, poolSize: 1, dataDir: other });
      await first.close();
      const second = await openDatabase({
        databaseUrl: undefined,
        poolSize: 1,
        dataDir: other,
        embeddedOwnerWaitMs: 300,
      });
      expect(await second.prepared.run('tollgate_test_one', 'select 1 as one', [])).toEqual([{ one: 1 }]);
      await second.close();
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });

  it('keeps a transaction of one connection whole while another connection queries', async () => {
    const client = await openDatabase({ databaseUrl: undefined, poolSize: 2, dataDir: folder });
    try {
      await sql`create table if not exists turn_test (n int)`.execute(server.db);
      const inside = client.db.transaction().execute(async (trx) => {
        await sql`insert into turn_test values (1)`.execute(trx);
        // Holds the transaction open while the other connection queries.
        await pause(50);
        await sql`insert into turn_test values (2)`.execute(trx);
        throw new Error('roll back');
      });
      const outside = sql<{ n: number }>`select count(*)::int as n from turn_test`.execute(server.db);
      await expect(inside).rejects.toThrow('roll back');
      // The other connection waited for the transaction to end: it never saw its rows.
      expect((await outside).rows).toEqual([{ n: 0 }]);
    } finally {
      await client.close();
    }
  });
});
