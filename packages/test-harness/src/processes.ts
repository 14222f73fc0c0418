import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';

/** The repository root: package directories given to startService are relative to it. */
export const ROOT = path.resolve(import.meta.dirname, '../../..');

export interface Service {
  name: string;
  child: ChildProcess;
  /** Where the process's stdout and stderr go. */
  logFile: string;
  /** Whether the process has ended (by itself or stopped). */
  readonly exited: boolean;
  /** SIGTERM, then SIGKILL after 10 s; resolves once the process has ended. */
  stop(): Promise<void>;
}

/**
 * Starts one service as its own process (`node src/main.ts` in its package), appending its output
 * to `<logDir>/<name>.log`.
 */
export function startService(
  name: string,
  packageDir: string,
  env: Record<string, string>,
  logDir: string,
): Service {
  const logFile = path.join(logDir, `${name}.log`);
  const log = openSync(logFile, 'a');
  const child = spawn(process.execPath, ['src/main.ts'], {
    cwd: path.join(ROOT, packageDir),
    env: { ...process.env, ...env },
    stdio: ['ignore', log, log],
  });
  // The child holds its own copy of the descriptor.
  closeSync(log);
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  return {
    name,
    child,
    logFile,
    get exited() {
      return exited();
    },
    async stop() {
      if (exited()) return;
      const ended = once(child, 'exit');
      child.kill('SIGTERM');
      // The give-up deadline for a stop, not a wait: the exit ends it at once.
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await ended;
      clearTimeout(timer);
    },
  };
}

/** The last lines of a service's log, for error messages. */
export function logTail(service: Service, lines = 20): string {
  try {
    return readFileSync(service.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/**
 * Waits until `url` answers 2xx. Given the service, stops waiting as soon as it has exited and
 * says why in the error (the tail of its log).
 */
export async function waitHealthy(url: string, timeoutMs = 30_000, service?: Service): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (service?.exited) {
      throw new Error(`${service.name} exited before ${url} answered:\n${logTail(service)}`);
    }
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not up yet
    }
    // A starting process announces nothing to another: ask its health route again.
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not become healthy${service ? `:\n${logTail(service)}` : ''}`);
}

/**
 * A TCP port on 127.0.0.1 that was free a moment ago (the system picks it for a listener on port
 * 0, which is then closed). For services that must be told their port before they start.
 */
export async function findFreePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise((resolve) => server.close(resolve));
  if (!port) throw new Error('no free port');
  return port;
}

/** Runs a command to completion and returns its stdout (throws with stderr on failure). */
export async function run(
  command: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string> } = {},
): Promise<string> {
  const child = spawn(command, args, {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk;
  });
  child.stderr.on('data', (chunk: Buffer) => {
    err += chunk;
  });
  // 'close', not 'exit': only then has all of the output been read.
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0) throw new Error(`${command} ${args.join(' ')} failed (${code}): ${err.trim()}`);
  return out;
}
