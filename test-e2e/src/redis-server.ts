/**
 * A Redis of a test's own: Debian's `redis-server` on a free port of 127.0.0.1, without
 * persistence, so that the test may `kill -9` it and start it again empty on the same port. The
 * shared test Redis is never touched.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { findFreePort, run } from '@tollgate/test-harness';

export interface OwnRedis {
  url: string;
  /** `kill -9`: everything it held is gone; resolves once the process has ended. */
  kill(): Promise<void>;
  /** Starts it again, empty, on the same port; resolves once it answers PING. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

async function answers(port: number): Promise<boolean> {
  try {
    return (await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), 'ping'])).trim() === 'PONG';
  } catch {
    return false;
  }
}

export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await findFreePort();
  let child: ChildProcess | null = null;
  const running = () => child !== null && child.exitCode === null && child.signalCode === null;

  async function start(): Promise<void> {
    child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    const deadline = Date.now() + 10_000;
    while (!(await answers(port))) {
      if (!running()) throw new Error(`redis-server on port ${port} exited at start`);
      if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer`);
      // redis-server announces nothing when it listens (no log, stdio ignored): ask again.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async function signal(name: NodeJS.Signals): Promise<void> {
    if (!child || !running()) return;
    const ended = once(child, 'exit');
    child.kill(name);
    await ended;
  }

  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    kill: () => signal('SIGKILL'),
    start,
    stop: () => signal('SIGTERM'),
  };
}
