import type { WrkResult } from './wrk.ts';

/**
 * `translated`: this gateway, chat completions on a Messages-kind alias (docs/translation.md).
 * `routed`: this gateway on an alias with two upstreams (docs/routing.md), the same calls as
 * `gateway` otherwise.
 */
export type Target = 'direct' | 'floor' | 'portkey' | 'gateway' | 'translated' | 'routed';

/** The rows that are this gateway, metered. */
const METERED: readonly Target[] = ['gateway', 'translated', 'routed'];

export interface Row {
  target: Target;
  stream: boolean;
  connections: number;
  result: WrkResult;
  /** CPU µs per request of each measured process group during this run. */
  cpuPerRequestUs: Record<string, number>;
}

export interface Ttfb {
  p50: number;
  p90: number;
  errors: number;
}

const format = (value: number | undefined, digits = 2) =>
  value !== undefined && Number.isFinite(value) ? value.toFixed(digits) : 'n/a';

/** CPU the target itself spends per call; for the gateway every process metering involves. */
function targetCpu(row: Row): string {
  const cpu = row.cpuPerRequestUs;
  if (METERED.includes(row.target)) {
    const sum = (cpu.gateway ?? 0) + (cpu.controlPlane ?? 0) + (cpu.postgres ?? 0) + (cpu.redis ?? 0);
    return `${format(sum, 0)} (gw ${format(cpu.gateway, 0)}, cp ${format(cpu.controlPlane, 0)}, pg ${format(cpu.postgres, 0)}, redis ${format(cpu.redis, 0)})`;
  }
  if (row.target === 'direct') return '';
  return format(cpu[row.target], 0);
}

export function meteredCpuUs(row: Row | undefined): number {
  if (!row) return Number.NaN;
  const cpu = row.cpuPerRequestUs;
  return (cpu.gateway ?? 0) + (cpu.controlPlane ?? 0) + (cpu.postgres ?? 0) + (cpu.redis ?? 0);
}

export function findRow(rows: Row[], target: Target, stream: boolean, connections: number): Row | undefined {
  return rows.find(
    (row) => row.target === target && row.stream === stream && row.connections === connections,
  );
}

export function renderTable(rows: Row[]): string[] {
  const lines = [
    '| mode | conns | target | req/s | p50 ms | p99 ms | added p50 ms | added p99 ms | errors | vs Portkey | vs floor | CPU µs/call |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const row of rows) {
    const direct = findRow(rows, 'direct', row.stream, row.connections);
    const portkey = findRow(rows, 'portkey', row.stream, row.connections);
    const floor = findRow(rows, 'floor', row.stream, row.connections);
    const added = row.target !== 'direct' && direct;
    const ratio = (other: Row | undefined) =>
      row.target === 'gateway' && other && other.result.errors === 0
        ? `${format(row.result.rps / other.result.rps, 2)}x`
        : '';
    lines.push(
      `| ${row.stream ? 'stream' : 'json'} | ${row.connections} | ${row.target} | ${format(row.result.rps, 0)} | ${format(row.result.p50, 3)} | ${format(row.result.p99, 3)} | ${added ? format(row.result.p50 - direct.result.p50, 3) : ''} | ${added ? format(row.result.p99 - direct.result.p99, 3) : ''} | ${row.result.errors} | ${ratio(portkey)} | ${ratio(floor)} | ${targetCpu(row)} |`,
    );
  }
  return lines;
}

/**
 * The goal lines, each judged on this run's numbers. `routedCpu`: per mode, the median over
 * rounds of the routed row's CPU per call over the one-upstream row's in the same round (10
 * connections); without it, the two median rows are compared.
 */
export function renderGoals(
  rows: Row[],
  ttfb: Record<string, Ttfb>,
  routedCpu: ReadonlyMap<boolean, number> = new Map(),
): string[] {
  const lines: string[] = [];
  const goal = (ok: boolean | undefined, text: string) =>
    lines.push(`  [${ok === undefined ? 'n/a ' : ok ? 'PASS' : 'FAIL'}] ${text}`);
  const gw10 = findRow(rows, 'gateway', false, 10);
  const pk10 = findRow(rows, 'portkey', false, 10);
  if (gw10 && pk10) {
    const ratio = gw10.result.rps / pk10.result.rps;
    goal(ratio >= 1.5, `10 conns: req/s >= 1.5x Portkey (${format(ratio, 2)}x)`);
    goal(gw10.result.rps >= 3000, `10 conns: >= 3,000 req/s (${format(gw10.result.rps, 0)})`);
    goal(gw10.result.errors === 0, `10 conns: zero errors (${gw10.result.errors})`);
    goal(
      gw10.result.p99 <= pk10.result.p99,
      `10 conns: p99 no worse than Portkey's (${format(gw10.result.p99, 2)} vs ${format(pk10.result.p99, 2)} ms)`,
    );
  }
  const gw1 = findRow(rows, 'gateway', false, 1);
  const pk1 = findRow(rows, 'portkey', false, 1);
  const direct1 = findRow(rows, 'direct', false, 1);
  if (gw1 && pk1 && direct1) {
    const ours = gw1.result.p50 - direct1.result.p50;
    const theirs = pk1.result.p50 - direct1.result.p50;
    goal(ours <= theirs, `1 conn: added p50 <= Portkey's (${format(ours, 3)} vs ${format(theirs, 3)} ms)`);
    const added99 = gw1.result.p99 - direct1.result.p99;
    goal(added99 <= 3, `1 conn: added p99 <= 3 ms (${format(added99, 3)} ms)`);
  }
  if (ttfb.gateway && ttfb.direct) {
    const added = ttfb.gateway.p50 - ttfb.direct.p50;
    goal(added <= 0.5, `stream: time to first byte within 0.5 ms of direct (+${format(added, 3)} ms)`);
  }
  const gwStream10 = findRow(rows, 'gateway', true, 10);
  if (gwStream10)
    goal(
      gwStream10.result.rps >= 2500,
      `stream 10 conns: >= 2,500 req/s (${format(gwStream10.result.rps, 0)})`,
    );
  if (gw10) {
    const cpu = meteredCpuUs(gw10);
    goal(
      cpu <= 350,
      `CPU per metered call at 10 conns (gateway+control plane+Postgres+Redis) <= 350 µs (${format(cpu, 0)})`,
    );
  }
  for (const stream of [false, true]) {
    const one = findRow(rows, 'gateway', stream, 10);
    const two = findRow(rows, 'routed', stream, 10);
    if (one && two) {
      const paired = routedCpu.get(stream);
      const change = (paired ?? meteredCpuUs(two) / meteredCpuUs(one)) - 1;
      const figures =
        paired === undefined
          ? `${format(meteredCpuUs(two), 0)} vs ${format(meteredCpuUs(one), 0)} µs, `
          : 'median of the rounds, paired: ';
      goal(
        change <= 0.05,
        `${stream ? 'stream' : 'json'} 10 conns: CPU per call with two upstreams within 5% of one (${figures}${change >= 0 ? '+' : ''}${format(change * 100, 1)}%)`,
      );
    }
  }
  goal(
    undefined,
    '/me/activity and /me/usage/summary under 50 ms with 10 million reservations: not part of this run',
  );
  return lines;
}

export function renderTtfb(ttfb: Record<string, Ttfb>): string[] {
  const lines = ['Time to first streamed byte (sequential, one connection):'];
  for (const [target, value] of Object.entries(ttfb))
    lines.push(
      `  ${target}: p50 ${format(value.p50, 3)} ms, p90 ${format(value.p90, 3)} ms, errors ${value.errors}` +
        (target !== 'direct' && ttfb.direct
          ? `, added p50 ${format(value.p50 - ttfb.direct.p50, 3)} ms`
          : ''),
    );
  return lines;
}

export { format };
