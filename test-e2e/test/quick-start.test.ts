/**
 * `scripts/up.sh` as a new user meets it, on free ports and a Postgres database whose URL carries
 * a password: the banner names the modes and never the URL, a second `up.sh` says which port is
 * in use, `scripts/admin.sh` in another terminal works on the same database and says which, and
 * SIGTERM stops the stack. (`.data/up.env` of the checkout is put back afterwards.)
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createTestDatabase, findFreePort, ROOT, type TestDatabase } from '@tollgate/test-harness';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

const PASSWORD = 'quick-start-secret-4d1e';
const UP_ENV = path.join(ROOT, '.data/up.env');

let database: TestDatabase;
let env: Record<string, string>;
let ports: { gateway: number; controlPlane: number; internal: number; mock: number };
let previousUpEnv: string | null = null;
let up: ChildProcess | undefined;
let upOutput = { stdout: '', stderr: '' };

function script(file: string, args: string[], extra: Record<string, string> = env) {
  const child = spawn('bash', [file, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...extra },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const output = { stdout: '', stderr: '' };
  child.stdout?.on('data', (chunk: Buffer) => {
    output.stdout += chunk;
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output.stderr += chunk;
  });
  return { child, output };
}

async function finished(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const [code] = (await once(child, 'exit')) as [number | null];
  return code;
}

beforeAll(async () => {
  database = await createTestDatabase(inject('testServices').postgresUrl, 'quick_start');
  const url = new URL(database.url);
  url.username = url.username || 'postgres';
  url.password = PASSWORD;
  const [gateway, controlPlane, internal, mock] = await Promise.all([
    findFreePort(),
    findFreePort(),
    findFreePort(),
    findFreePort(),
  ]);
  ports = { gateway, controlPlane, internal, mock };
  env = {
    DATABASE_URL: url.toString(),
    REDIS_URL: '',
    GATEWAY_PORT: String(gateway),
    CONTROL_PLANE_PORT: String(controlPlane),
    CONTROL_PLANE_INTERNAL_PORT: String(internal),
    MOCK_UPSTREAM_PORT: String(mock),
  };
  previousUpEnv = await readFile(UP_ENV, 'utf8').catch(() => null);
  const started = script('scripts/up.sh', []);
  up = started.child;
  upOutput = started.output;
  const deadline = Date.now() + 150_000;
  while (!upOutput.stdout.includes('Tollgate is running') && Date.now() < deadline) {
    if (up.exitCode !== null) throw new Error(`up.sh ended: ${upOutput.stdout}${upOutput.stderr}`);
    // up.sh announces it is ready only in its output, collected as it comes: read it again.
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}, 180_000);

afterAll(async () => {
  if (up?.pid && up.exitCode === null) {
    up.kill('SIGTERM');
    await finished(up);
  }
  if (previousUpEnv === null) await rm(UP_ENV, { force: true });
  else await writeFile(UP_ENV, previousUpEnv, { mode: 0o600 });
  await database?.drop();
});

describe('scripts/up.sh and scripts/admin.sh', () => {
  it('prints the modes, never the database URL or its password', () => {
    expect(upOutput.stdout).toContain(
      'Tollgate is running (database: Postgres (DATABASE_URL); limiter: in-process)',
    );
    const all = upOutput.stdout + upOutput.stderr;
    expect(all).not.toContain(PASSWORD);
    expect(all).not.toContain('postgres://');
  });

  it('remembers its settings for admin.sh, readable by the owner only', async () => {
    const remembered = await readFile(UP_ENV, 'utf8');
    expect(remembered).toContain(`DATABASE_URL=${env.DATABASE_URL}`);
    expect((await stat(UP_ENV)).mode & 0o077).toBe(0);
  });

  it('refuses a second start on a port in use and says so', async () => {
    const second = script('scripts/up.sh', []);
    expect(await finished(second.child)).toBe(1);
    expect(second.output.stderr).toContain(
      `Port ${ports.gateway} (GATEWAY_PORT) is already in use (EADDRINUSE)`,
    );
    expect(second.output.stdout).not.toContain('Tollgate is running');
    // The first stack still answers.
    expect((await fetch(`http://127.0.0.1:${ports.gateway}/health`)).ok).toBe(true);
  });

  it('runs admin.sh from another terminal on the same database and names it', async () => {
    const email = `quick-${Date.now()}@example.test`;
    // A second terminal: none of up.sh's environment.
    const fresh = spawn(
      'bash',
      ['scripts/admin.sh', 'create-account', email, '--password', 'a long password here'],
      {
        cwd: ROOT,
        env: Object.fromEntries(
          Object.entries(process.env).filter(([name]) => !['DATABASE_URL', 'REDIS_URL'].includes(name)),
        ),
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    fresh.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk;
    });
    fresh.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk;
    });
    expect(await finished(fresh)).toBe(0);
    expect(stderr).toContain(`database postgres (127.0.0.1:5432/${database.name})`);
    expect(stderr + stdout).not.toContain(PASSWORD);
    const pool = new pg.Pool({ connectionString: database.url, max: 1 });
    try {
      const { rows } = await pool.query('select email from accounts where email = $1', [email]);
      expect(rows).toEqual([{ email }]);
    } finally {
      await pool.end();
    }
  });

  it('stops every service on SIGTERM', async () => {
    up!.kill('SIGTERM');
    await finished(up!);
    for (const port of [ports.gateway, ports.controlPlane, ports.mock]) {
      await expect(fetch(`http://127.0.0.1:${port}/health`)).rejects.toThrow();
    }
  });
});
