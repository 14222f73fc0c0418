import type { FinishItem, GatewayHeartbeat } from '@tollgate/schemas';
import { createLogger } from '@tollgate/service-kit';
import { describe, expect, it } from 'vitest';
import { createHeartbeat } from './heartbeat.ts';

const PROVIDERS: Record<string, string> = { 'gpt-a': 'openai-main', 'claude-a': 'anthropic-main' };

function finished(alias: string, action: FinishItem['action'], outcome: string): FinishItem {
  return {
    action,
    outcome,
    alias,
    reservationId: crypto.randomUUID(),
    keyId: crypto.randomUUID(),
    accountId: crypto.randomUUID(),
    surface: 'chat_completions',
    occurredAt: new Date().toISOString(),
    httpStatus: 200,
    ...(action === 'settle' ? { usage: { inputTokens: '1', outputTokens: '1' } } : {}),
  } as FinishItem;
}

function heartbeatWith(send: (beat: GatewayHeartbeat) => Promise<unknown>) {
  return createHeartbeat({
    send,
    providerOf: (alias) => PROVIDERS[alias],
    intervalMs: 60_000,
    redisUrl: undefined,
    logger: createLogger({ name: 'heartbeat-test', level: 'silent' }),
  });
}

describe('gateway heartbeat', () => {
  it('counts answered and failed upstream calls per provider, and ignores outcomes that say nothing of it', async () => {
    const sent: GatewayHeartbeat[] = [];
    const heartbeat = heartbeatWith(async (beat) => sent.push(beat));
    heartbeat.record(finished('gpt-a', 'settle', 'ok'));
    heartbeat.record(finished('gpt-a', 'release', 'upstream_rejected'));
    heartbeat.record(finished('gpt-a', 'release', 'upstream_unavailable'));
    heartbeat.record(finished('claude-a', 'release', 'upstream_invalid_response'));
    heartbeat.record(finished('claude-a', 'hold', 'billing_settlement_pending'));
    heartbeat.record(finished('claude-a', 'release', 'client_disconnected'));
    heartbeat.record(finished('unknown-alias', 'release', 'upstream_unavailable'));
    await heartbeat.beat();

    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ gatewayId: heartbeat.gatewayId, redis: 'not_configured' });
    expect(sent[0]?.providers).toEqual([
      { providerId: 'openai-main', successes: 2, failures: 1 },
      { providerId: 'anthropic-main', successes: 1, failures: 1 },
    ]);
    // Each beat carries what happened since the previous one.
    await heartbeat.beat();
    expect(sent[1]?.providers).toEqual([]);
  });

  it('keeps the counts of a beat that could not be delivered for the next one', async () => {
    let fail = true;
    const sent: GatewayHeartbeat[] = [];
    const heartbeat = heartbeatWith(async (beat) => {
      if (fail) throw new Error('control plane unreachable');
      sent.push(beat);
    });
    heartbeat.record(finished('gpt-a', 'release', 'upstream_unavailable'));
    await heartbeat.beat();
    heartbeat.record(finished('gpt-a', 'release', 'upstream_unavailable'));
    fail = false;
    await heartbeat.beat();
    expect(sent[0]?.providers).toEqual([{ providerId: 'openai-main', successes: 0, failures: 2 }]);
    await heartbeat.stop();
  });
});
