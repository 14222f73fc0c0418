/**
 * `tollgate-admin` as an operator runs it: its own process, on a database of the test Postgres.
 * Bad input ends with one line on stderr and exit status 2, never a stack trace.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { createTestDatabase, type TestDatabase, testSecrets } from '@tollgate/test-harness';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseArguments } from './arguments.ts';

const PACKAGE = path.resolve(import.meta.dirname, '../..');
let database: TestDatabase;
let env: Record<string, string>;

beforeAll(async () => {
  database = await createTestDatabase(inject('testServices').postgresUrl, 'cli');
  // A password in the URL (ignored by the test server) must never be printed.
  const url = new URL(database.url);
  url.username = url.username || 'postgres';
  url.password = 'not-to-be-printed-9f2c';
  env = {
    ...testSecrets(),
    DATABASE_URL: url.toString(),
    REDIS_URL: '',
    CATALOG_FILE: '',
    LOG_LEVEL: 'warn',
  };
});

afterAll(() => database?.drop());

async function admin(...args: string[]) {
  const child = spawn(process.execPath, ['bin/tollgate-admin.ts', ...args], {
    cwd: PACKAGE,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk;
  });
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, stdout, stderr };
}

/** Exit status 2, the reason on stderr, no stack frame or Node error code anywhere. */
function expectUsageFailure(result: { code: number | null; stdout: string; stderr: string }, reason: string) {
  expect(result.code).toBe(2);
  expect(result.stderr).toContain(reason);
  expect(result.stdout + result.stderr).not.toMatch(/\n\s+at |ERR_[A-Z_]+|Error:/);
}

// Each command is a fresh Node process loading the control plane: seconds apiece on a loaded box.
describe('tollgate-admin', { timeout: 120_000 }, () => {
  const email = `cli-${Date.now()}@example.test`;

  it('names the database it works on without its password, and takes a negative adjustment', async () => {
    const created = await admin('create-account', email);
    expect(created.code).toBe(0);
    expect(created.stderr).toContain(`database postgres (127.0.0.1:5432/${database.name})`);
    expect(created.stderr + created.stdout).not.toContain('not-to-be-printed');
    expect((await admin('grant-credit', email, '1000')).code).toBe(0);

    const adjusted = await admin('adjust-credit', email, '-500', '--note', 'refund of a test');
    expect(adjusted.code).toBe(0);
    expect(JSON.parse(adjusted.stdout)).toMatchObject({ adjusted: '-500' });
    const after = await admin('adjust-credit', email, '--note=second', '-200');
    expect(JSON.parse(after.stdout)).toMatchObject({ adjusted: '-200' });
    expect(JSON.parse((await admin('verify-ledger', email)).stdout)).toEqual({
      consistent: true,
      problems: [],
    });
  });

  it('refuses bad input with one line and exit status 2', async () => {
    expectUsageFailure(await admin('adjust-credit', email, '-500', '--bogus', 'x'), 'unknown option --bogus');
    expectUsageFailure(await admin('adjust-credit', email, '-x'), 'unknown option -x');
    expectUsageFailure(await admin('adjust-credit', email, '-500', '--note'), '--note needs a value');
    expectUsageFailure(await admin('grant-credit'), 'missing <email>');
    expectUsageFailure(await admin('grant-credit', email), 'missing <amount>');
    expectUsageFailure(
      await admin('grant-credit', email, '12abc'),
      'the amount must be a non-negative integer',
    );
    expectUsageFailure(await admin('grant-credit', email, '-5'), 'the amount must be a non-negative integer');
    expectUsageFailure(
      await admin('adjust-credit', email, '1.5', '--note', 'x'),
      'the amount must be an integer',
    );
    expectUsageFailure(await admin('adjust-credit', email, '-500'), 'needs --note');
    expectUsageFailure(
      await admin('adjust-credit', 'nobody@example.test', '-500', '--note', 'x'),
      'no account with email nobody@example.test',
    );
    expectUsageFailure(await admin('no-such-command'), 'unknown command no-such-command');
  });
});

describe('parseArguments', () => {
  it('reads negative numbers as values and options in both spellings', () => {
    expect(parseArguments(['adjust-credit', 'a@b.c', '-500', '--note', 'x y', '--off', '-h'])).toEqual({
      positionals: ['adjust-credit', 'a@b.c', '-500'],
      options: { note: 'x y', off: true, help: true },
    });
    expect(parseArguments(['x', '--name=-3', '--', '--note'])).toEqual({
      positionals: ['x', '--note'],
      options: { name: '-3' },
    });
  });
});
