import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';

/** The processes startScript started, for the bench to stop at the end. */
export const scriptChildren: ChildProcess[] = [];

/** A process the bench starts from a script of its own (the floor proxy, Portkey's node build). */
export function startScript(
  logDir: string,
  name: string,
  cwd: string,
  args: string[],
  extraEnv: Record<string, string> = {},
  node = process.execPath,
): ChildProcess {
  const log = openSync(path.join(logDir, `${name}.log`), 'a');
  const child = spawn(node, args, {
    cwd,
    env: { ...process.env, ...extraEnv },
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  scriptChildren.push(child);
  return child;
}

/** Resolves once something accepts TCP connections on the port (30 s at most). */
export async function waitListening(port: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.end();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`nothing listens on port ${port}`);
}
