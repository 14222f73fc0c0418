import type { GatewayHeartbeat, UpstreamBreakerReport } from '@tollgate/schemas';
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
  kind: 'service' | 'model';
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
    refusedCredentials: beat.refusedCredentials ?? [],
    upstreamBreakers: beat.upstreamBreakers ?? [],
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

/**
 * The state of each service and each provider now; provider ids stay internal (readStatus lends a
 * provider's state to the published models it serves). Nothing is assumed: the gateway is up only
 * if one sent a heartbeat recently, a provider operational only if recent calls did not all fail.
 */
async function readInternalState(deps: Dependencies): Promise<InternalState> {
  const now = deps.clock.now().getTime();
  const { gatewayStaleMs, providerWindowMs } = deps.config.status;
  const database = await checkDatabase(deps);
  const services: ComponentReport[] = [
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
    services.push(
      { name: 'gateway', kind: 'service', status: 'unknown', detail: 'Unknown while the database is down.' },
      { name: 'redis', kind: 'service', status: 'unknown', detail: 'Unknown while the database is down.' },
    );
    return { services, providers: new Map(), models: [] };
  }

  const gateways = await repository.listGatewaysSeenSince(deps.db, new Date(now - gatewayStaleMs));
  const staleSeconds = Math.round(gatewayStaleMs / 1000);
  services.push(
    gateways.length === 0
      ? {
          name: 'gateway',
          kind: 'service',
          status: 'down',
          detail: `No gateway has reported in the last ${staleSeconds} seconds.`,
        }
      : { name: 'gateway', kind: 'service', status: 'operational', detail: 'Answering requests.' },
  );
  services.push(redisState(gateways.map((gateway) => gateway.redis)));

  const [catalog, outcomes, breakers] = await Promise.all([
    readGatewayCatalog(deps),
    repository.sumProviderOutcomesSince(deps.db, new Date(now - providerWindowMs)),
    listUpstreamBreakers(deps),
  ]);
  const minutes = Math.round(providerWindowMs / 60_000);
  // A provider with an upstream whose breaker is open fails calls, whatever the counts say.
  const tripped = new Set(
    breakers.filter((breaker) => breaker.state === 'open').map((breaker) => breaker.providerId),
  );
  const providers = new Map(
    catalog.providers.map((provider) => {
      const state = providerState(outcomes.get(provider.id) ?? { successes: 0n, failures: 0n }, minutes);
      return [
        provider.id,
        tripped.has(provider.id) && state.status === 'operational'
          ? { status: 'degraded' as const, detail: 'Some calls are failing.' }
          : state,
      ];
    }),
  );
  const models = catalog.aliases
    .filter((alias) => alias.published)
    .map((alias) => ({
      alias: alias.alias,
      providerId: alias.providerId,
      providerIds: [...new Set(alias.upstreams.map((upstream) => upstream.providerId))],
    }))
    .sort((a, b) => a.alias.localeCompare(b.alias));
  return { services, providers, models };
}

interface InternalState {
  services: ComponentReport[];
  /** Keyed by provider id: never shown, only lent to the models it serves. */
  providers: Map<string, Pick<ComponentReport, 'status' | 'detail'>>;
  /** providerId: the first upstream's (its history); providerIds: every upstream's. */
  models: { alias: string; providerId: string; providerIds: string[] }[];
}

/** Samples are stored under these names; the public report never shows them. */
const providerComponent = (id: string) => `provider:${id}`;

function redisState(reports: ('ok' | 'failing' | 'not_configured')[]): ComponentReport {
  const base = { name: 'redis', kind: 'service' as const };
  if (reports.length === 0) return { ...base, status: 'unknown', detail: 'No gateway is reporting.' };
  const failing = reports.filter((report) => report === 'failing').length;
  if (failing === reports.length) return { ...base, status: 'down', detail: 'Gateways cannot reach Redis.' };
  if (failing > 0) return { ...base, status: 'degraded', detail: 'Some gateways cannot reach Redis.' };
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
  // Counts stay internal (they tell traffic); the public sees what a caller would notice.
  const total = counts.successes + counts.failures;
  if (total === 0n) return { status: 'operational', detail: `No calls in the last ${minutes} minutes.` };
  if (counts.successes === 0n) return { status: 'down', detail: `Calls are failing.` };
  // One failure in five or more is more than the odd timeout.
  if (counts.failures * 5n >= total) return { status: 'degraded', detail: `Some calls are failing.` };
  return { status: 'operational', detail: 'Answering normally.' };
}

/**
 * A model's state from its upstreams' providers: down only when every one is (calls fail over to
 * the others), operational when every one is, degraded otherwise. Names no provider.
 */
function modelState(
  states: (Pick<ComponentReport, 'status' | 'detail'> | undefined)[],
): Pick<ComponentReport, 'status' | 'detail'> {
  const known = states.filter((state) => state !== undefined);
  if (known.length === 0) return { status: 'unknown', detail: 'No provider serves it.' };
  if (known.length === 1) return known[0]!;
  if (known.every((state) => state.status === 'down'))
    return { status: 'down', detail: 'Calls are failing.' };
  if (known.every((state) => state.status === 'operational'))
    return known.find((state) => state.detail === 'Answering normally.') ?? known[0]!;
  return { status: 'degraded', detail: 'Some calls are failing.' };
}

function overallOf(components: ComponentReport[]): StatusReport['status'] {
  const essential = components.filter((component) => ['database', 'gateway'].includes(component.name));
  if (essential.some((component) => component.status === 'down')) return 'down';
  return components.every((component) => component.status === 'operational') ? 'operational' : 'degraded';
}

/** The public status: current state of each component with its daily history from the samples. */
export async function readStatus(deps: Dependencies): Promise<StatusReport> {
  const now = deps.clock.now();
  const { services, providers, models } = await readInternalState(deps);
  const { historyDays, gatewayPublicUrl } = deps.config.status;
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const first = today - (historyDays - 1) * DAY_MS;
  const days = Array.from({ length: historyDays }, (_, index) =>
    new Date(first + index * DAY_MS).toISOString().slice(0, 10),
  );
  const rows =
    services.find((component) => component.name === 'database')?.status === 'operational'
      ? await repository.summariseSamplesSince(deps.db, new Date(first))
      : [];
  const byKey = new Map(rows.map((row) => [`${row.component} ${row.day}`, row]));
  const historyOf = (sampledAs: string): DayHistory[] =>
    days.map((day): DayHistory => {
      const row = byKey.get(`${sampledAs} ${day}`);
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
    });
  const current = [
    ...services.map((component) => ({ ...component, history: historyOf(component.name) })),
    // A model's history is its provider's (samples are taken per provider, not per alias).
    ...models.map(({ alias, providerId, providerIds }) => ({
      name: `model:${alias}`,
      kind: 'model' as const,
      ...modelState(providerIds.map((id) => providers.get(id))),
      history: historyOf(providerComponent(providerId)),
    })),
  ];
  return {
    status: overallOf(current),
    checkedAt: now.toISOString(),
    gatewayUrl: gatewayPublicUrl,
    components: current,
  };
}

/** Takes one sample of every service and provider (one per interval, shared by every control plane). */
export async function sampleOnce(deps: Dependencies): Promise<void> {
  const now = deps.clock.now().getTime();
  const { sampleIntervalMs, historyDays } = deps.config.status;
  const { services, providers } = await readInternalState(deps);
  const sampledAt = new Date(Math.floor(now / sampleIntervalMs) * sampleIntervalMs);
  await repository.insertSamples(deps.db, [
    ...services.map((component) => ({
      component: component.name,
      sampled_at: sampledAt,
      status: component.status,
    })),
    ...[...providers].map(([id, state]) => ({
      component: providerComponent(id),
      sampled_at: sampledAt,
      status: state.status,
    })),
  ]);
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

/** A provider credential that live gateways stopped sending because the provider refused it. */
export interface RefusedCredentialReport {
  providerId: string;
  /** The credential's name (never its value). */
  credential: string;
  upstreamStatus: number | null;
  /** The earliest refusal any live gateway reported. */
  refusedAt: string;
  /** How many live gateways took it out of rotation. */
  gateways: number;
}

/**
 * The credentials the gateways seen lately (within the status page's staleness) took out of
 * rotation, one entry per provider and credential (docs/routing.md).
 */
export async function listRefusedCredentials(deps: Dependencies): Promise<RefusedCredentialReport[]> {
  const since = new Date(deps.clock.now().getTime() - deps.config.status.gatewayStaleMs);
  const merged = new Map<string, RefusedCredentialReport>();
  for (const gateway of await repository.listRefusedCredentials(deps.db, since)) {
    for (const refusal of gateway.refused_credentials) {
      const key = JSON.stringify([refusal.providerId, refusal.credential]);
      const known = merged.get(key);
      if (!known) {
        merged.set(key, { ...refusal, gateways: 1 });
        continue;
      }
      known.gateways += 1;
      if (refusal.refusedAt < known.refusedAt) known.refusedAt = refusal.refusedAt;
    }
  }
  return [...merged.values()].sort(
    (a, b) => a.providerId.localeCompare(b.providerId) || a.credential.localeCompare(b.credential),
  );
}

/**
 * The upstreams whose breaker is open or that a provider benched, one entry per upstream, as the
 * most recently seen gateway reported it (the state is shared: every gateway reports the same).
 */
export async function listUpstreamBreakers(deps: Dependencies): Promise<UpstreamBreakerReport[]> {
  const since = new Date(deps.clock.now().getTime() - deps.config.status.gatewayStaleMs);
  const merged = new Map<string, UpstreamBreakerReport>();
  for (const gateway of await repository.listUpstreamBreakers(deps.db, since)) {
    for (const breaker of gateway.upstream_breakers) {
      const key = JSON.stringify([breaker.providerId, breaker.upstreamModel]);
      if (!merged.has(key)) merged.set(key, breaker);
    }
  }
  return [...merged.values()].sort(
    (a, b) => a.providerId.localeCompare(b.providerId) || a.upstreamModel.localeCompare(b.upstreamModel),
  );
}
