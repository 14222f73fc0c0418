import type { GatewayHeartbeat } from '@tollgate/schemas';
import { sql } from 'kysely';
import type { Dependencies } from '../../deps.ts';
import { readGatewayCatalog } from '../catalog/catalog.service.ts';
import * as repository from './status.repository.ts';

export type ComponentState = 'operational' | 'degraded' | 'down' | 'unknown';

export interface DayHistory {
  /** UTC day, YYYY-MM-DD. */
  day: string;
  /** The worst state sampled that day; unknown when nothing was sampled. */
  status: ComponentState;
  samples: number;
  operational: number;
}

export interface ComponentReport {
  name: string;
  kind: 'service' | 'provider';
  status: ComponentState;
  detail: string;
}

export interface StatusReport {
  status: 'operational' | 'degraded' | 'down';
  checkedAt: string;
  gatewayUrl: string;
  components: (ComponentReport & { history: DayHistory[] })[];
}

const DATABASE_CHECK_TIMEOUT_MS = 2_000;
const DAY_MS = 86_400_000;

/** Stores a gateway's heartbeat and adds its provider outcomes to the current minute. */
export async function recordHeartbeat(
  deps: Dependencies,
  beat: GatewayHeartbeat,
): Promise<{ accepted: true }> {
  const now = deps.clock.now();
  await repository.recordHeartbeat(deps.db, {
    gatewayId: beat.gatewayId,
    startedAt: new Date(beat.startedAt),
    seenAt: now,
    redis: beat.redis,
  });
  const minute = new Date(Math.floor(now.getTime() / 60_000) * 60_000);
  await repository.addProviderOutcomes(deps.db, minute, beat.providers);
  return { accepted: true };
}

async function checkDatabase(deps: Dependencies): Promise<ComponentState> {
  return Promise.race([
    sql`select 1`.execute(deps.db).then(
      () => 'operational' as const,
      () => 'down' as const,
    ),
    new Promise<'down'>((resolve) => setTimeout(() => resolve('down'), DATABASE_CHECK_TIMEOUT_MS).unref()),
  ]);
}

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}

/**
 * The state of each component now. Nothing is assumed: the gateway is up only if one sent a
 * heartbeat recently, and a provider is operational only if recent calls did not all fail.
 */
export async function readCurrentState(deps: Dependencies): Promise<ComponentReport[]> {
  const now = deps.clock.now().getTime();
  const { gatewayStaleMs, providerWindowMs } = deps.config.status;
  const database = await checkDatabase(deps);
  const components: ComponentReport[] = [
    { name: 'control-plane', kind: 'service', status: 'operational', detail: 'Answering requests.' },
    {
      name: 'database',
      kind: 'service',
      status: database,
      detail: database === 'operational' ? 'Reachable.' : 'Not answering.',
    },
  ];
  if (database !== 'operational') {
    // Without the database nothing else can be read; say so rather than guess.
    components.push(
      { name: 'gateway', kind: 'service', status: 'unknown', detail: 'Unknown while the database is down.' },
      { name: 'redis', kind: 'service', status: 'unknown', detail: 'Unknown while the database is down.' },
    );
    return components;
  }

  const gateways = await repository.listGatewaysSeenSince(deps.db, new Date(now - gatewayStaleMs));
  const staleSeconds = Math.round(gatewayStaleMs / 1000);
  components.push(
    gateways.length === 0
      ? {
          name: 'gateway',
          kind: 'service',
          status: 'down',
          detail: `No gateway has reported in the last ${staleSeconds} seconds.`,
        }
      : {
          name: 'gateway',
          kind: 'service',
          status: 'operational',
          detail: `${plural(gateways.length, 'gateway')} up.`,
        },
  );
  components.push(redisState(gateways.map((gateway) => gateway.redis)));

  const [catalog, outcomes] = await Promise.all([
    readGatewayCatalog(deps),
    repository.sumProviderOutcomesSince(deps.db, new Date(now - providerWindowMs)),
  ]);
  const minutes = Math.round(providerWindowMs / 60_000);
  for (const provider of catalog.providers) {
    const counts = outcomes.get(provider.id) ?? { successes: 0n, failures: 0n };
    components.push({ name: `provider:${provider.id}`, kind: 'provider', ...providerState(counts, minutes) });
  }
  return components;
}

function redisState(reports: ('ok' | 'failing' | 'not_configured')[]): ComponentReport {
  const base = { name: 'redis', kind: 'service' as const };
  if (reports.length === 0) return { ...base, status: 'unknown', detail: 'No gateway is reporting.' };
  const failing = reports.filter((report) => report === 'failing').length;
  if (failing === reports.length) return { ...base, status: 'down', detail: 'Gateways cannot reach Redis.' };
  if (failing > 0)
    return { ...base, status: 'degraded', detail: `${plural(failing, 'gateway')} cannot reach Redis.` };
  if (reports.every((report) => report === 'not_configured')) {
    return {
      ...base,
      status: 'operational',
      detail: 'Not used: gateways limit requests in-process (one machine).',
    };
  }
  return { ...base, status: 'operational', detail: 'Reachable.' };
}

function providerState(
  counts: { successes: bigint; failures: bigint },
  minutes: number,
): Pick<ComponentReport, 'status' | 'detail'> {
  const total = counts.successes + counts.failures;
  if (total === 0n) return { status: 'operational', detail: `No calls in the last ${minutes} minutes.` };
  const summary = `${counts.failures} of ${total} calls failed in the last ${minutes} minutes.`;
  if (counts.successes === 0n) return { status: 'down', detail: summary };
  // One failure in five or more is more than the odd timeout.
  if (counts.failures * 5n >= total) return { status: 'degraded', detail: summary };
  return { status: 'operational', detail: summary };
}

function overallOf(components: ComponentReport[]): StatusReport['status'] {
  const essential = components.filter((component) => ['database', 'gateway'].includes(component.name));
  if (essential.some((component) => component.status === 'down')) return 'down';
  return components.every((component) => component.status === 'operational') ? 'operational' : 'degraded';
}

/** The public status: current state of each component with its daily history from the samples. */
export async function readStatus(deps: Dependencies): Promise<StatusReport> {
  const now = deps.clock.now();
  const current = await readCurrentState(deps);
  const { historyDays, gatewayPublicUrl } = deps.config.status;
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const first = today - (historyDays - 1) * DAY_MS;
  const days = Array.from({ length: historyDays }, (_, index) =>
    new Date(first + index * DAY_MS).toISOString().slice(0, 10),
  );
  const rows =
    current.find((component) => component.name === 'database')?.status === 'operational'
      ? await repository.summariseSamplesSince(deps.db, new Date(first))
      : [];
  const byKey = new Map(rows.map((row) => [`${row.component} ${row.day}`, row]));
  const components = current.map((component) => ({
    ...component,
    history: days.map((day): DayHistory => {
      const row = byKey.get(`${component.name} ${day}`);
      if (!row) return { day, status: 'unknown', samples: 0, operational: 0 };
      const status: ComponentState =
        row.down > 0
          ? 'down'
          : row.degraded > 0
            ? 'degraded'
            : row.operational > 0
              ? 'operational'
              : 'unknown';
      return { day, status, samples: row.total, operational: row.operational };
    }),
  }));
  return {
    status: overallOf(current),
    checkedAt: now.toISOString(),
    gatewayUrl: gatewayPublicUrl,
    components,
  };
}

/** Takes one sample of every component (one per interval, shared by every control plane). */
export async function sampleOnce(deps: Dependencies): Promise<void> {
  const now = deps.clock.now().getTime();
  const { sampleIntervalMs, historyDays } = deps.config.status;
  const current = await readCurrentState(deps);
  const sampledAt = new Date(Math.floor(now / sampleIntervalMs) * sampleIntervalMs);
  await repository.insertSamples(
    deps.db,
    current.map((component) => ({
      component: component.name,
      sampled_at: sampledAt,
      status: component.status,
    })),
  );
  await repository.pruneBefore(deps.db, new Date(now - (historyDays + 1) * DAY_MS));
}

/** Samples every interval until stopped; a failed pass is logged and the next one tries again. */
export function startStatusSampler(deps: Dependencies): { stop(): void } {
  const { sampleIntervalMs, gatewayStaleMs } = deps.config.status;
  const sample = () =>
    sampleOnce(deps).catch((error: unknown) => deps.logger.warn({ err: error }, 'status sample failed'));
  // The first sample waits until running gateways have had time to report since this start.
  const first = setTimeout(sample, Math.min(sampleIntervalMs, gatewayStaleMs));
  const timer = setInterval(sample, sampleIntervalMs);
  first.unref();
  timer.unref();
  return {
    stop: () => {
      clearTimeout(first);
      clearInterval(timer);
    },
  };
}
