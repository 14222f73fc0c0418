/**
 * A supervisor (systemd, Docker, Kubernetes) stops a service with SIGTERM to the top process. A
 * service started as `pnpm --filter ... start` through the toolchain's pnpm must receive it and
 * stop gracefully (its "stopped" log line), not be left running behind an ended pnpm.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findFreePort, ROOT, waitHealthy } from '@tollgate/test-harness';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The toolchain's pnpm as this checkout writes it (into the test's folder: `.tools/` may be shared
 * with other checkouts), or the pnpm on PATH when the toolchain did not install its own.
 */
const START = `
source scripts/toolchain.sh
if [ -f "$TOLLGATE_TOOLS/pnpm/node_modules/pnpm/package.json" ]; then
  _tollgate_pnpm_shim "$SHIM"
  exec "$SHIM" --filter @tollgate/mock-upstream start
fi
exec pnpm --filter @tollgate/mock-upstream start
`;

let folder: string | undefined;
afterAll(async () => {
  if (folder) await rm(folder, { recursive: true, force: true });
});

/** pids the service logged (pino writes one per line). */
function loggedPids(logFile: string): number[] {
  const pids = new Set<number>();
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    const pid = /"pid":(\d+)/.exec(line)?.[1];
    if (pid) pids.add(Number(pid));
  }
  return [...pids];
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('SIGTERM through pnpm start', () => {
  it('reaches the service, which stops gracefully', async () => {
    folder = await mkdtemp(path.join(tmpdir(), 'tollgate-signals-'));
    const logFile = path.join(folder, 'mock.log');
    const port = await findFreePort();
    const { openSync, closeSync } = await import('node:fs');
    const log = openSync(logFile, 'a');
    const top = spawn('bash', ['-c', START], {
      cwd: ROOT,
      env: {
        ...process.env,
        SHIM: path.join(folder, 'pnpm'),
        MOCK_UPSTREAM_HOST: '127.0.0.1',
        MOCK_UPSTREAM_PORT: String(port),
      },
      stdio: ['ignore', log, log],
    });
    closeSync(log);
    let service: number[] = [];
    try {
      await waitHealthy(`http://127.0.0.1:${port}/health`, 60_000);
      service = loggedPids(logFile);
      expect(service).toHaveLength(1);
      expect(service[0]).not.toBe(top.pid);

      const ended = once(top, 'exit');
      top.kill('SIGTERM');
      await ended;
      // The service itself got the signal and finished its graceful stop.
      const deadline = Date.now() + 15_000;
      // The service is a grandchild: its exit is no event here, only its pid going away.
      while (alive(service[0]!) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(alive(service[0]!)).toBe(false);
      const text = readFileSync(logFile, 'utf8');
      expect(text).toContain('"signal":"SIGTERM"');
      expect(text).toContain('"msg":"stopped"');
      await expect(fetch(`http://127.0.0.1:${port}/health`)).rejects.toThrow();
    } finally {
      if (top.exitCode === null && top.signalCode === null) top.kill('SIGKILL');
      for (const pid of service) if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
  });
});
