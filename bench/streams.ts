/**
 * Long streams, as LLM traffic is: N streamed calls held open at once, each lasting
 * BENCH_STREAM_SECONDS with an event every 1/BENCH_STREAM_RATE s from the mock (one word each,
 * usage at the end), spread over the three surfaces, through each target in turn: the mock
 * directly, the floor proxy, Portkey, and this gateway with full metering. For each
 * target and level it prints streams held, errors, RSS per open stream, CPU per relayed event,
 * the gaps between events as the client saw them (p50/p99/max, and what the target added over
 * direct), time to first byte, event-loop lag (the gateway's, from its metrics, and the load
 * generator's own, which must stay low for the figures to mean anything), and for the gateway the
 * ledger check. Usage: `pnpm bench:streams`.
 *
 * Environment: BENCH_STREAM_LEVELS (concurrent streams, default "500,2000,5000"),
 * BENCH_STREAM_SECONDS (30), BENCH_STREAM_RATE (events per second per stream, 25),
 * BENCH_STREAM_RAMP_SECONDS (every stream of a level starts within this, 2),
 * BENCH_STREAM_PROMPT_KIB (prompt padding per call, 0), BENCH_STREAM_WARMUP (streams of the unreported 5 s warm-up of each target, at most the first
 * level; 500), BENCH_STREAM_TARGETS ("direct,floor,portkey,gateway"), BENCH_PORTKEY_NODE (a Node binary
 * to run Portkey under instead of this one), and BENCH_DATABASE_URL /
 * BENCH_REDIS_URL, BENCH_PROFILE_DIR and BENCH_GATEWAY_ENV as for `pnpm bench`.
 * BENCH_STREAM_INSPECT_PORT starts the gateway with its inspector on that port and reports, per
 * stream, its memory after a full collection (RSS, JS heap, external and array buffers);
 * BENCH_STREAM_SNAPSHOT=1 also has it write a heap snapshot at each level's idle point and plateau
 * (in services/gateway, through --heapsnapshot-signal).
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import path from 'node:path';
import { createHistogram, monitorEventLoopDelay, type RecordableHistogram } from 'node:perf_hooks';
import { cpuMs } from './src/cpu.ts';
import { type CollectedMemory, collectedMemory } from './src/inspector-memory.ts';
import { portkeyHeaders, startPortkey } from './src/portkey.ts';
import { format } from './src/report.ts';
import { startScript, waitListening } from './src/scripts.ts';
import { type BenchStack, PORTS, parseEnvChanges, startBenchStack } from './src/stack.ts';

const levels = (process.env.BENCH_STREAM_LEVELS ?? '500,2000,5000').split(',').map(Number);
const seconds = Number(process.env.BENCH_STREAM_SECONDS ?? 30);
const rate = Number(process.env.BENCH_STREAM_RATE ?? 25);
const rampSeconds = Number(process.env.BENCH_STREAM_RAMP_SECONDS ?? 2);
const targetNames = (process.env.BENCH_STREAM_TARGETS ?? 'direct,floor,portkey,gateway').split(',');
const portkeyNode = process.env.BENCH_PORTKEY_NODE;
const warmupStreams = Number(process.env.BENCH_STREAM_WARMUP ?? 500);
const promptKiB = Number(process.env.BENCH_STREAM_PROMPT_KIB ?? 0);
const inspectPort = Number(process.env.BENCH_STREAM_INSPECT_PORT ?? 0);
const snapshots = process.env.BENCH_STREAM_SNAPSHOT === '1';

/** Why streams failed, with how many: printed under the table. */
const failures = new Map<string, number>();
function failed(reason: string): void {
  failures.set(reason, (failures.get(reason) ?? 0) + 1);
}
const SURFACES = [
  { path: '/v1/chat/completions', model: 'gpt-mock' },
  { path: '/v1/messages', model: 'claude-mock' },
  { path: '/v1/responses', model: 'gpt-mock' },
] as const;

interface Target {
  name: string;
  port: number;
  /** The process whose memory and CPU the row reports. */
  pid: () => number;
  headers: Record<string, string>;
  /** Headers that depend on the surface called (Portkey's provider). */
  headersFor?: (surfacePath: string) => Record<string, string>;
  metricsPort?: number;
  /** Its inspector's port: memory after a full collection is read through it. */
  inspectPort?: number;
}

interface LevelResult {
  target: string;
  streams: number;
  held: number;
  errors: number;
  events: number;
  rssPerStreamKiB: number;
  /** After a full collection, per stream held (BENCH_STREAM_INSPECT_PORT). */
  collectedPerStreamKiB: CollectedMemory | null;
  cpuPerEventUs: number;
  cpuPerCallUs: number;
  gap: { p50: number; p99: number; max: number };
  ttfb: { p50: number; p99: number };
  targetLagP99Ms: number | null;
  generatorLagP99Ms: number;
}

function maxOrNull(a: number | null | undefined, b: number | null | undefined): number | null {
  if (a == null) return b ?? null;
  return b == null ? a : Math.max(a, b);
}

function bodyFor(surface: (typeof SURFACES)[number], duration: number): string {
  const words = Math.max(1, Math.round(duration * rate));
  // Real prompts are often long (a conversation, a document): BENCH_STREAM_PROMPT_KIB pads the
  // prompt so that what a call holds for its whole stream shows in the memory per stream.
  const padding =
    promptKiB > 0
      ? `${'lorem ipsum dolor sit amet '.repeat(Math.ceil((promptKiB * 1024) / 27)).slice(0, promptKiB * 1024)} `
      : '';
  const text = `${padding}Long stream @mock(words=${words},chunk_delay=${Math.round(1000 / rate)},input_tokens=40,output_tokens=${words})`;
  if (surface.path === '/v1/responses')
    return JSON.stringify({ model: surface.model, input: text, stream: true });
  return JSON.stringify({
    model: surface.model,
    max_tokens: words + 16,
    messages: [{ role: 'user', content: text }],
    stream: true,
    ...(surface.path === '/v1/chat/completions' ? { stream_options: { include_usage: true } } : {}),
  });
}

/** Resident memory of a process in KiB (VmRSS). */
function rssKiB(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  } catch {
    return 0;
  }
}

interface TargetMetrics {
  /** Event-loop lag p99 since the last scrape (prom-client resets it on each collect). */
  lagP99Ms: number | null;
}

/** What the gateway's own /metrics says; null for a target without them. */
async function scrapeMetrics(port: number | undefined): Promise<TargetMetrics | null> {
  if (!port) return null;
  try {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const read = (name: string) => {
      const value = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm').exec(text)?.[1];
      return value === undefined ? null : Number(value);
    };
    const lag = read('nodejs_eventloop_lag_p99_seconds');
    return { lagP99Ms: lag === null ? null : lag * 1000 };
  } catch {
    return null;
  }
}

/**
 * The lowest of a few samples 500 ms apart of the target's RSS: nearer what stays between
 * collections than one sample taken at any point of the garbage's rise and fall. The gateway's
 * metrics are read at each sample too (each read resets its lag histogram: the worst p99 is kept).
 */
async function memoryLow(
  target: Target,
  pid: number,
  samples: number,
): Promise<{ rss: number; metrics: TargetMetrics | null }> {
  let rss = Number.POSITIVE_INFINITY;
  let lagP99Ms: number | null = null;
  let scrapedAny = false;
  for (let sample = 0; sample < samples; sample++) {
    if (sample > 0) await new Promise((resolve) => setTimeout(resolve, 500));
    rss = Math.min(rss, rssKiB(pid));
    const scraped = await scrapeMetrics(target.metricsPort);
    if (!scraped) continue;
    scrapedAny = true;
    lagP99Ms = maxOrNull(lagP99Ms, scraped.lagP99Ms);
  }
  return { rss, metrics: scrapedAny ? { lagP99Ms } : null };
}

/** The target's memory after a full collection (and a heap snapshot, if asked), when it has an inspector. */
async function inspectMemory(target: Target, pid: number): Promise<CollectedMemory | null> {
  if (!target.inspectPort) return null;
  const memory = await collectedMemory(target.inspectPort);
  if (snapshots) {
    process.kill(pid, 'SIGUSR2');
    // The snapshot is written synchronously by the target; give it time before the load resumes.
    await new Promise((resolve) => setTimeout(resolve, 5000));
  }
  return memory;
}

/** One stream: counts its events and records the gaps between them and its first byte. */
function openStream(
  agent: Agent,
  target: Target,
  index: number,
  gaps: RecordableHistogram,
  ttfb: RecordableHistogram,
  open: { count: number },
  duration: number,
): Promise<{ ok: boolean; events: number }> {
  const surface = SURFACES[index % SURFACES.length]!;
  const body = bodyFor(surface, duration);
  return new Promise((resolve) => {
    const started = performance.now();
    let last = 0;
    let events = 0;
    let tail = '';
    let finished = false;
    const done = (ok: boolean) => {
      if (!finished) {
        finished = true;
        resolve({ ok, events });
      }
    };
    const call = request(
      {
        agent,
        host: '127.0.0.1',
        port: target.port,
        method: 'POST',
        path: surface.path,
        headers: {
          ...target.headers,
          ...target.headersFor?.(surface.path),
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (response) => {
        if (response.statusCode !== 200) {
          let text = '';
          response.on('data', (chunk) => {
            text += chunk;
          });
          response.on('end', () => {
            failed(`${response.statusCode} ${text.slice(0, 120)}`);
            done(false);
          });
          return;
        }
        open.count += 1;
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          const now = performance.now();
          if (last === 0) ttfb.record(Math.max(1, Math.round((now - started) * 1000)));
          else gaps.record(Math.max(1, Math.round((now - last) * 1000)));
          last = now;
          // Events end with a blank line; one read may carry several, or part of one.
          const text = tail + chunk;
          const parts = text.split('\n\n');
          tail = parts.pop() ?? '';
          events += parts.length;
        });
        response.on('end', () => {
          open.count -= 1;
          // A stream cut short is an error, whatever its status said.
          const whole = events > duration * rate * 0.9;
          if (!whole) failed(`${target.name}: ended after ${events} events`);
          done(whole);
        });
        response.on('error', () => done(false));
      },
    );
    call.on('error', (error) => {
      failed(`${target.name}: ${String(error)}`);
      done(false);
    });
    call.end(body);
  });
}

async function runLevel(target: Target, streams: number, duration = seconds): Promise<LevelResult> {
  const agent = new Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
  const gaps = createHistogram();
  const ttfb = createHistogram();
  const generatorLag = monitorEventLoopDelay({ resolution: 10 });
  const open = { count: 0 };
  const pid = target.pid();
  // Settle after the previous level, then read the idle figures.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  // Its metrics are read too, which starts the lag histogram afresh for this level.
  const { rss: idleRss } = await memoryLow(target, pid, 3);
  const idleCollected = await inspectMemory(target, pid);
  const cpuBefore = cpuMs(pid);
  generatorLag.enable();
  const calls: Promise<{ ok: boolean; events: number }>[] = [];
  const spacing = (rampSeconds * 1000) / streams;
  for (let index = 0; index < streams; index += 1) {
    calls.push(openStream(agent, target, index, gaps, ttfb, open, duration));
    if (index % 50 === 49) await new Promise((resolve) => setTimeout(resolve, spacing * 50));
  }
  // The plateau: every stream started and none finished yet.
  await new Promise((resolve) => setTimeout(resolve, Math.max(1000, (duration * 1000) / 3)));
  const held = open.count;
  const { rss: plateauRss, metrics: plateauMetrics } = await memoryLow(target, pid, 6);
  const plateauCollected = await inspectMemory(target, pid);
  const results = await Promise.all(calls);
  const cpu = cpuMs(pid) - cpuBefore;
  generatorLag.disable();
  agent.destroy();
  const events = results.reduce((sum, result) => sum + result.events, 0);
  const us = (histogram: RecordableHistogram, percentile: number) => histogram.percentile(percentile) / 1000;
  return {
    target: target.name,
    streams,
    held,
    errors: results.filter((result) => !result.ok).length,
    events,
    rssPerStreamKiB: held > 0 ? (plateauRss - idleRss) / held : 0,
    collectedPerStreamKiB:
      idleCollected && plateauCollected && held > 0
        ? {
            rss: (plateauCollected.rss - idleCollected.rss) / held,
            heapUsed: (plateauCollected.heapUsed - idleCollected.heapUsed) / held,
            external: (plateauCollected.external - idleCollected.external) / held,
            arrayBuffers: (plateauCollected.arrayBuffers - idleCollected.arrayBuffers) / held,
          }
        : null,
    cpuPerEventUs: events > 0 ? (cpu * 1000) / events : 0,
    cpuPerCallUs: (cpu * 1000) / streams,
    gap: { p50: us(gaps, 50), p99: us(gaps, 99), max: gaps.max / 1000 },
    ttfb: { p50: us(ttfb, 50), p99: us(ttfb, 99) },
    // The lag of the ramp and plateau (up to the scrape above) and of the rest, whichever is worse.
    targetLagP99Ms: maxOrNull(plateauMetrics?.lagP99Ms, (await scrapeMetrics(target.metricsPort))?.lagP99Ms),

    generatorLagP99Ms: generatorLag.percentile(99) / 1e6,
  };
}

function collectedText(row: LevelResult): string {
  const per = row.collectedPerStreamKiB;
  if (!per) return '';
  return `; after a full collection per stream: RSS ${format(per.rss, 1)}, heap ${format(per.heapUsed, 1)}, external ${format(per.external, 1)} (array buffers ${format(per.arrayBuffers, 1)}) KiB`;
}

function render(rows: LevelResult[]): string[] {
  const nominal = 1000 / rate;
  const lines = [
    `| streams | target | held | errors | RSS/stream KiB | CPU µs/event | CPU µs/call | gap p50 / p99 / max ms | added p99 ms | TTFB p50 / p99 ms | lag p99 ms (target / generator) |`,
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const row of rows) {
    const direct = rows.find((other) => other.streams === row.streams && other.target === 'direct');
    const added = direct && row.target !== 'direct' ? format(row.gap.p99 - direct.gap.p99, 1) : '';
    lines.push(
      `| ${row.streams} | ${row.target} | ${row.held} | ${row.errors} | ${format(row.rssPerStreamKiB, 1)} | ${format(row.cpuPerEventUs, 1)} | ${format(row.cpuPerCallUs, 0)} | ${format(row.gap.p50, 1)} / ${format(row.gap.p99, 1)} / ${format(row.gap.max, 0)} | ${added} | ${format(row.ttfb.p50, 1)} / ${format(row.ttfb.p99, 1)} | ${row.targetLagP99Ms === null ? '-' : format(row.targetLagP99Ms, 1)} / ${format(row.generatorLagP99Ms, 1)} |`,
    );
  }
  for (const row of rows) {
    const text = collectedText(row);
    if (text) lines.push(`${row.streams} ${row.target}${text}`);
  }
  lines.push('', `Nominal gap ${format(nominal, 1)} ms (${rate} events/s), ${seconds} s per stream.`);
  return lines;
}

async function main(): Promise<void> {
  const started = Date.now();
  const stack: BenchStack = await startBenchStack({
    adminUrl: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    redisUrl: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
    gatewayEnv: {
      METRICS_PORT: String(PORTS.metrics),
      ...(inspectPort
        ? {
            NODE_OPTIONS: `--inspect=127.0.0.1:${inspectPort}${snapshots ? ' --heapsnapshot-signal=SIGUSR2' : ''}`,
          }
        : {}),
      ...parseEnvChanges(process.env.BENCH_GATEWAY_ENV),
    },
    profileDir: process.env.BENCH_PROFILE_DIR,
    keyConcurrency: Math.max(...levels) * 2,
  });
  try {
    const maxStreams = String(Math.max(...levels) * 2);
    const floor = startScript(stack.work, 'floor', path.join(path.dirname(import.meta.filename), 'src'), [
      'floor-proxy.ts',
      String(PORTS.floor),
      `http://127.0.0.1:${PORTS.mock}`,
      maxStreams,
    ]);
    await waitListening(PORTS.floor);
    const targets: Target[] = [
      {
        name: 'direct',
        port: PORTS.mock,
        pid: () => stack.pidOf('mock-upstream'),
        headers: { authorization: 'Bearer sk-direct' },
      },
      {
        name: 'floor',
        port: PORTS.floor,
        pid: () => floor.pid!,
        headers: { authorization: 'Bearer sk-direct' },
      },
      {
        name: 'gateway',
        port: PORTS.gateway,
        pid: () => stack.pidOf('gateway'),
        headers: {
          authorization: `Bearer ${stack.key}`,
          'x-api-key': stack.key,
          'anthropic-version': '2023-06-01',
        },
        metricsPort: PORTS.metrics,
        ...(inspectPort ? { inspectPort } : {}),
      },
    ];
    if (targetNames.includes('portkey')) {
      const portkey = startPortkey(stack.work, PORTS.portkey, portkeyNode);
      await waitListening(PORTS.portkey);
      targets.push({
        name: 'portkey',
        port: PORTS.portkey,
        pid: () => portkey.pid!,
        headers: {},
        headersFor: (surfacePath) => portkeyHeaders(surfacePath, PORTS.mock),
      });
    }
    const chosen = targets.filter((target) => targetNames.includes(target.name));
    // Each target first carries a short unreported load, so that the first level's memory per
    // stream is not the heap's one-off growth to its working size divided by that level's streams.
    for (const target of chosen) await runLevel(target, Math.min(warmupStreams, levels[0]!), 5);
    failures.clear();
    const rows: LevelResult[] = [];
    for (const streams of levels) {
      for (const target of chosen) {
        const row = await runLevel(target, streams);
        rows.push(row);
        console.error(
          `${streams} streams ${target.name}: held ${row.held}, errors ${row.errors}, gap p99 ${format(row.gap.p99, 1)} ms, ${format(row.rssPerStreamKiB, 1)} KiB/stream, ${format(row.cpuPerEventUs, 1)} µs/event${collectedText(row)}`,
        );
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const ledger = await stack.verifyLedger();
    console.log(
      [
        '',
        `Tollgate long-stream benchmark: everything on one box, targets one after another at each level`,
        '',
        ...render(rows),
        ...(failures.size
          ? ['', `Failures: ${[...failures].map(([reason, count]) => `${count} × ${reason}`).join('; ')}`]
          : []),
        '',
        `Metered calls recorded: ${ledger.counts}. Ledger consistent: ${ledger.consistent}${ledger.problems.length ? ` (${ledger.problems.slice(0, 3).join('; ')})` : ''}. Total time ${Math.round((Date.now() - started) / 1000)}s.`,
        '',
      ].join('\n'),
    );
  } finally {
    await stack.stop();
  }
}

await main();
