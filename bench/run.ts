/**
 * Side-by-side benchmark on one box, driven by wrk, targets interleaved at each level: the mock
 * upstream directly, a minimal Node proxy (the floor, bench/src/floor-proxy.ts), Portkey's gateway
 * (@portkey-ai/gateway, node build, same mock as a custom OpenAI host) and this gateway with full
 * metering (auth, limits in Redis, reserve, upstream call, settle) on a real Postgres and Redis;
 * non-streamed and streamed, at 1, 10 and 50 connections (and the same calls on an alias with two
 * upstreams, the `routed` row); then time to first streamed byte. Prints
 * requests/s, p50/p99, added latency, ratios vs Portkey and the floor, CPU per call of each
 * process, the issue's goal lines with pass/fail, and checks the ledger. Usage: `pnpm bench`.
 *
 * Environment: BENCH_DATABASE_URL (admin URL of a Postgres whose user may create databases;
 * default postgres://postgres@127.0.0.1:5432/postgres), BENCH_REDIS_URL (redis://127.0.0.1:6379),
 * BENCH_SECONDS (per run, default 3; longer runs, e.g. 10, give steadier numbers), BENCH_ROUNDS
 * (default 1: how many times the interleaved targets run at each level; each row is then the
 * target's median round, and the ratios of every round to Portkey's are listed with their median),
 * BENCH_CONNECTIONS (default "1,10,50"), BENCH_TTFB_COUNT (streamed calls per target, default 300),
 * BENCH_WARMUP_SECONDS (per target and mode before measuring, default 2), BENCH_MODES
 * ("json,stream") and BENCH_TARGETS ("direct,floor,portkey,gateway,routed,translated") to run a subset, and
 * BENCH_PROFILE_DIR to have gateway and control plane write CPU profiles there, and
 * BENCH_GATEWAY_ENV ("NAME=value,OTHER=" — an empty value unsets) and BENCH_CONTROL_PLANE_ENV to
 * change the gateway's or the control plane's environment for an A/B run.
 * BENCH_INSTANT_BILLING=1 answers the gateway's reservations and settlements at once from a
 * stand-in (bench/src/instant-billing.ts): the ceiling of any billing design that keeps this
 * gateway; its calls are not recorded, so the ledger line shows only the few reservations the
 * stand-in forwarded.
 */
import path from 'node:path';
import { ROOT } from '@tollgate/test-harness';
import { type CpuGroups, cpuSince, pidsNamed, snapshot } from './src/cpu.ts';
import { portkeyHeaders, startPortkey } from './src/portkey.ts';
import {
  format,
  meteredCpuUs,
  type Row,
  renderGoals,
  renderTable,
  renderTtfb,
  type Target,
  type Ttfb,
} from './src/report.ts';
import { startScript, waitListening } from './src/scripts.ts';
import { type BenchStack, PORTS, parseEnvChanges, ROUTED_ALIAS, startBenchStack } from './src/stack.ts';
import { measureTimeToFirstByte } from './src/ttfb.ts';
import { requireWrk, runWrk } from './src/wrk.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const seconds = Number(process.env.BENCH_SECONDS ?? 3);
/** Interleaved rounds per level: on a box whose neighbours come and go, one round is a sample of one. */
const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 1));
const ttfbCount = Number(process.env.BENCH_TTFB_COUNT ?? 300);
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 2);
const connectionLevels = (process.env.BENCH_CONNECTIONS ?? '1,10,50').split(',').map(Number);
const modes = (process.env.BENCH_MODES ?? 'json,stream').split(',').map((mode) => mode === 'stream');
const chosenTargets = (process.env.BENCH_TARGETS ?? 'direct,floor,portkey,gateway,routed,translated').split(
  ',',
);
/** When set, gateway and control plane write V8 CPU profiles there (node --cpu-prof). */
const profileDir = process.env.BENCH_PROFILE_DIR;
/** Billing answered at once by a stand-in: what the gateway costs when billing costs nothing. */
const instantBilling = process.env.BENCH_INSTANT_BILLING === '1';

async function startStack(): Promise<BenchStack> {
  const stack = await startBenchStack({
    adminUrl,
    redisUrl,
    profileDir,
    instantBilling,
    gatewayEnv: parseEnvChanges(process.env.BENCH_GATEWAY_ENV),
    controlPlaneEnv: parseEnvChanges(process.env.BENCH_CONTROL_PLANE_ENV),
  });
  // One call before measuring: a refusal here would make every number below meaningless.
  const probe = await fetch(`http://127.0.0.1:${PORTS.gateway}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.key}` },
    body: chatBody(false),
  });
  if (probe.status !== 200) {
    const text = await probe.text();
    await stack.stop();
    throw new Error(`the gateway refused the probe: ${probe.status} ${text}`);
  }
  return stack;
}

/** `claude-mock` is Messages-kind: the gateway translates the call both ways (the `translated` row). */
function chatBody(stream: boolean, model = 'gpt-mock'): string {
  return JSON.stringify({
    model,
    messages: [
      { role: 'system', content: 'You are a concise assistant.' },
      { role: 'user', content: 'Say hello to the benchmark in a few words, please.' },
    ],
    max_tokens: 64,
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  });
}

const ROW_ORDER = (['direct', 'floor', 'portkey', 'gateway', 'routed', 'translated'] as Target[]).filter(
  (target) => chosenTargets.includes(target),
);

async function main(): Promise<void> {
  requireWrk();
  const started = Date.now();
  const stack = await startStack();
  try {
    await measure(stack, started);
  } finally {
    await stack.stop();
  }
}

async function measure(stack: BenchStack, started: number): Promise<void> {
  const { key, work } = stack;
  const floor = startScript(work, 'floor', path.join(ROOT, 'bench'), [
    'src/floor-proxy.ts',
    String(PORTS.floor),
    `http://127.0.0.1:${PORTS.mock}`,
  ]);
  const portkey = startPortkey(work, PORTS.portkey);
  await waitListening(PORTS.floor);
  await waitListening(PORTS.portkey);
  const pidOf = stack.pidOf;
  const groups: CpuGroups = {
    gateway: () => [pidOf('gateway')],
    controlPlane: () => [pidOf('control-plane')],
    postgres: () => pidsNamed('postgres'),
    redis: () => pidsNamed('redis-server'),
    mock: () => [pidOf('mock-upstream')],
    floor: () => [floor.pid!],
    portkey: () => [portkey.pid!],
  };
  const json = { 'content-type': 'application/json' };
  const targets: Record<Target, { url: string; headers: Record<string, string>; model?: string }> = {
    direct: {
      url: `http://127.0.0.1:${PORTS.mock}/v1/chat/completions`,
      headers: { ...json, authorization: 'Bearer sk-direct' },
    },
    floor: {
      url: `http://127.0.0.1:${PORTS.floor}/v1/chat/completions`,
      headers: { ...json, authorization: 'Bearer sk-direct' },
    },
    portkey: {
      url: `http://127.0.0.1:${PORTS.portkey}/v1/chat/completions`,
      headers: { ...json, ...portkeyHeaders('/v1/chat/completions', PORTS.mock) },
    },
    gateway: {
      url: `http://127.0.0.1:${PORTS.gateway}/v1/chat/completions`,
      headers: { ...json, authorization: `Bearer ${key}` },
    },
    translated: {
      url: `http://127.0.0.1:${PORTS.gateway}/v1/chat/completions`,
      headers: { ...json, authorization: `Bearer ${key}` },
      model: 'claude-mock',
    },
    routed: {
      url: `http://127.0.0.1:${PORTS.gateway}/v1/chat/completions`,
      headers: { ...json, authorization: `Bearer ${key}` },
      model: ROUTED_ALIAS,
    },
  };
  // Warm-up of every target before anything is measured: the first calls load modules lazily and
  // JIT-compile the hot path, which would otherwise be billed to the 1-connection rows.
  for (const target of ROW_ORDER)
    for (const stream of modes) {
      const { url, headers, model } = targets[target];
      await runWrk({
        url,
        body: chatBody(stream, model),
        headers,
        connections: 10,
        seconds: warmupSeconds,
        scriptDir: work,
      });
    }
  const rows: Row[] = [];
  const roundRatios: string[] = [];
  /** Routed over one-upstream CPU per call, paired by round, at 10 connections: its median per mode. */
  const routedCpu = new Map<boolean, number>();
  for (const stream of modes) {
    for (const connections of connectionLevels) {
      const runs = new Map<Target, Row[]>(ROW_ORDER.map((target) => [target, []]));
      for (let round = 0; round < rounds; round += 1) {
        // Interleaved: the targets back to back at each level, so a noisy neighbour hits all alike.
        for (const target of ROW_ORDER) {
          const { url, headers, model } = targets[target];
          const body = chatBody(stream, model);
          await runWrk({ url, body, headers, connections, seconds: 1, scriptDir: work });
          const before = snapshot(groups);
          const result = await runWrk({ url, body, headers, connections, seconds, scriptDir: work });
          const cpu = cpuSince(groups, before);
          const cpuPerRequestUs = Object.fromEntries(
            Object.entries(cpu).map(([name, ms]) => [
              name,
              result.requests > 0 ? (ms * 1000) / result.requests : 0,
            ]),
          );
          runs.get(target)!.push({ target, stream, connections, result, cpuPerRequestUs });
          console.error(
            `${stream ? 'stream' : 'json'} c=${connections} ${target}: ${format(result.rps, 0)} req/s, p50 ${format(result.p50, 3)} ms, p99 ${format(result.p99, 3)} ms, errors ${result.errors}`,
          );
        }
      }
      for (const target of ROW_ORDER) rows.push(medianRun(runs.get(target)!));
      if (rounds > 1) {
        roundRatios.push(...ratiosOfRounds(runs, stream, connections));
        const paired = routedCpuOfRounds(runs);
        if (paired) {
          roundRatios.push(
            `  ${stream ? 'stream' : 'json'} c=${connections} routed CPU per call over gateway's: ${paired.listed}; median ${format(paired.median, 3)}`,
          );
          if (connections === 10) routedCpu.set(stream, paired.median);
        }
      }
    }
  }
  const ttfb: Record<string, Ttfb> = {};
  for (const target of ROW_ORDER) {
    const url = new URL(targets[target].url);
    ttfb[target] = await measureTimeToFirstByte({
      origin: url.origin,
      path: url.pathname,
      body: chatBody(true, targets[target].model),
      headers: targets[target].headers,
      count: ttfbCount,
    });
  }
  // Every metered call must have been settled exactly: the ledger check runs on the bench database.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const { counts, ...ledger } = await stack.verifyLedger();
  console.log(
    [
      '',
      ...(instantBilling ? ['BILLING ANSWERED BY THE INSTANT STAND-IN: nothing below was metered.'] : []),
      `Tollgate benchmark: ${seconds}s per run after 1s warm-up, wrk, everything on one box; interleaved targets`,
      '',
      ...renderTable(rows),
      ...(roundRatios.length > 0
        ? [
            '',
            `Each row is its target's median of ${rounds} interleaved rounds. Ratios to Portkey by round:`,
            ...roundRatios,
          ]
        : []),
      '',
      ...renderTtfb(ttfb),
      '',
      'Goals (docs/development/benchmarks.md), judged on this run:',
      ...renderGoals(rows, ttfb, routedCpu),
      '',
      `Metered calls recorded: ${counts}. Ledger consistent: ${ledger.consistent}${ledger.problems.length ? ` (${ledger.problems.slice(0, 3).join('; ')})` : ''}. Total time ${Math.round((Date.now() - started) / 1000)}s.`,
      '',
    ].join('\n'),
  );
}

/** The item with the median value (the lower middle one of an even count). */
function median<T>(items: readonly T[], value: (item: T) => number): T {
  const sorted = [...items].sort((a, b) => value(a) - value(b));
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

/** The run with the median requests per second. */
function medianRun(runs: Row[]): Row {
  return median(runs, (row) => row.result.rps);
}

/** Each target's req/s over Portkey's in the same round, then their median. */
function ratiosOfRounds(runs: Map<Target, Row[]>, stream: boolean, connections: number): string[] {
  const portkey = runs.get('portkey');
  if (!portkey) return [];
  return ROW_ORDER.filter((target) => target !== 'portkey').map((target) => {
    const ratios = runs.get(target)!.map((row, round) => row.result.rps / portkey[round]!.result.rps);
    const listed = ratios.map((ratio) => format(ratio, 2)).join(', ');
    const middle = median(ratios, (ratio) => ratio);
    return `  ${stream ? 'stream' : 'json'} c=${connections} ${target}: ${listed}; median ${format(middle, 2)}x`;
  });
}

/**
 * The routed row's metered CPU per call over the one-upstream row's, round by round: the two run
 * back to back, so the box's drift between rounds cancels out of each ratio.
 */
function routedCpuOfRounds(runs: Map<Target, Row[]>): { listed: string; median: number } | null {
  const one = runs.get('gateway');
  const two = runs.get('routed');
  if (!one || !two) return null;
  const ratios = two.map((row, round) => meteredCpuUs(row) / meteredCpuUs(one[round]));
  return {
    listed: ratios.map((ratio) => format(ratio, 3)).join(', '),
    median: median(ratios, (ratio) => ratio),
  };
}

await main();
