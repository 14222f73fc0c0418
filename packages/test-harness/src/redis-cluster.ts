import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findFreePort, run } from './processes.ts';

export interface LocalRedisCluster {
  /** A seed node's URL; with `cluster: true` the client discovers the others. */
  url: string;
  stop(): Promise<void>;
}

/** Polls `check` every 100 ms until it holds (a failing check counts as not yet). */
export async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    // The condition is asked again; only its own holding ends the wait.
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * A three-node Redis Cluster from Debian's redis-server on free local ports, for one test file:
 * nothing kept on disk but the nodes' own files in a temporary folder.
 */
export async function startRedisCluster(): Promise<LocalRedisCluster> {
  const folder = await mkdtemp(path.join(tmpdir(), 'tollgate-cluster-'));
  const ports = [await findFreePort(), await findFreePort(), await findFreePort()];
  const nodes: ChildProcess[] = [];
  const stop = async () => {
    for (const node of nodes) node.kill('SIGTERM');
    await Promise.all(
      nodes.map((node) =>
        node.exitCode === null ? new Promise((resolve) => node.once('exit', resolve)) : null,
      ),
    );
    await rm(folder, { recursive: true, force: true });
  };
  try {
    for (const port of ports) {
      nodes.push(
        spawn(
          'redis-server',
          [
            '--port',
            String(port),
            '--bind',
            '127.0.0.1',
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            `nodes-${port}.conf`,
            '--dir',
            folder,
            '--save',
            '',
            '--appendonly',
            'no',
          ],
          { stdio: 'ignore' },
        ),
      );
      await waitFor(
        async () => (await run('redis-cli', ['-p', String(port), 'ping'])).trim() === 'PONG',
        `node ${port}`,
      );
    }
    await run('redis-cli', [
      '--cluster',
      'create',
      ...ports.map((port) => `127.0.0.1:${port}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]);
    for (const port of ports) {
      await waitFor(
        async () =>
          (await run('redis-cli', ['-p', String(port), 'cluster', 'info'])).includes('cluster_state:ok'),
        `cluster state on ${port}`,
      );
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: `redis://127.0.0.1:${ports[0]}`, stop };
}
