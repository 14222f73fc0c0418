import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { run } from '@tollgate/test-harness';

export interface WrkResult {
  requests: number;
  seconds: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  errors: number;
}

function toMs(value: string): number {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(value.trim());
  if (!match) return Number.NaN;
  const number = Number(match[1]);
  return { us: number / 1000, ms: number, s: number * 1000, m: number * 60_000 }[
    match[2] as 'us' | 'ms' | 's' | 'm'
  ];
}

/** Stops the run before anything starts when wrk is missing, with how to get it. */
export function requireWrk(): void {
  const probe = spawnSync('wrk', ['--version']);
  if (probe.error) {
    console.error('pnpm bench needs wrk on PATH: sudo apt-get install -y wrk (Debian package)');
    process.exit(1);
  }
}

/** wrk (Debian's package) against one URL with a POST body; microsecond-resolution percentiles. */
export async function runWrk(options: {
  url: string;
  body: string;
  headers: Record<string, string>;
  connections: number;
  seconds: number;
  scriptDir: string;
}): Promise<WrkResult> {
  const script = path.join(options.scriptDir, `wrk-${options.connections}-${Date.now()}.lua`);
  const lines = [
    'wrk.method = "POST"',
    `wrk.body = ${JSON.stringify(options.body)}`,
    ...Object.entries(options.headers).map(
      ([name, value]) => `wrk.headers[${JSON.stringify(name)}] = ${JSON.stringify(value)}`,
    ),
  ];
  writeFileSync(script, `${lines.join('\n')}\n`);
  const threads = Math.min(2, options.connections);
  const out = await run('wrk', [
    `-t${threads}`,
    `-c${options.connections}`,
    `-d${options.seconds}s`,
    '--latency',
    '-s',
    script,
    options.url,
  ]);
  const percentile = (label: string) =>
    toMs(new RegExp(`^\\s*${label}%\\s+(\\S+)`, 'm').exec(out)?.[1] ?? '');
  const requests = Number(/(\d+) requests in ([\d.]+)(\w+)/.exec(out)?.[1] ?? 0);
  const duration = /requests in ([\d.]+\w+)/.exec(out)?.[1] ?? `${options.seconds}s`;
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const socketErrors = socket ? socket.slice(1).reduce((sum, value) => sum + Number(value), 0) : 0;
  const seconds = toMs(duration) / 1000;
  return {
    requests,
    seconds,
    rps: requests / seconds,
    p50: percentile('50'),
    p90: percentile('90'),
    p99: percentile('99'),
    errors: non2xx + socketErrors,
  };
}
