import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { openSync } from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '../..');

export interface Service {
  name: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts one service as its own process (`node src/main.ts` in its package), logging to a file. */
export function startService(
  name: string,
  packageDir: string,
  env: Record<string, string>,
  logDir: string,
): Service {
  const log = openSync(path.join(logDir, `${name}.log`), 'a');
  const child = spawn(process.execPath, ['src/main.ts'], {
    cwd: path.join(ROOT, packageDir),
    env: { ...process.env, ...env },
    stdio: ['ignore', log, log],
  });
  return {
    name,
    child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await once(child, 'exit');
      clearTimeout(timer);
    },
  };
}

export async function waitHealthy(url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not up yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${url} did not become healthy`);
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
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`${command} ${args.join(' ')} failed (${code}): ${err.trim()}`);
  return out;
}
