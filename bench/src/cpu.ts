import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100;

/** User + system CPU time (ms) a process has used so far; 0 once it is gone. */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** Pids whose command name is `name` (e.g. every postgres backend, redis-server). */
export function pidsNamed(name: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === name) pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

export type CpuGroups = Record<string, () => number[]>;

/** CPU time per group between two snapshots. Groups are re-listed each time (backends come and go). */
export function snapshot(groups: CpuGroups): Record<string, Map<number, number>> {
  return Object.fromEntries(
    Object.entries(groups).map(([name, pids]) => [name, new Map(pids().map((pid) => [pid, cpuMs(pid)]))]),
  );
}

export function cpuSince(
  groups: CpuGroups,
  before: Record<string, Map<number, number>>,
): Record<string, number> {
  return Object.fromEntries(
    Object.entries(groups).map(([name, pids]) => {
      let total = 0;
      for (const pid of pids()) total += cpuMs(pid) - (before[name]?.get(pid) ?? 0);
      return [name, total];
    }),
  );
}
