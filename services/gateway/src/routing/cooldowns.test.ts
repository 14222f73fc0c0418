import { describe, expect, it } from 'vitest';
import { createCooldowns, retryAfterMs } from './cooldowns.ts';

const main = { providerId: 'p', upstreamModel: 'main' };
const other = { providerId: 'p', upstreamModel: 'other' };

describe('cooldowns', () => {
  it('cools a failed upstream for the configured span, ended early by a success', () => {
    let now = 1_000;
    const cooldowns = createCooldowns({ cooldownMs: 500, maxRetryAfterMs: 60_000, now: () => now });
    cooldowns.failed(main);
    expect(cooldowns.isCooling(main)).toBe(true);
    expect(cooldowns.isCooling(other)).toBe(false);
    now += 499;
    expect(cooldowns.isCooling(main)).toBe(true);
    now += 1;
    expect(cooldowns.isCooling(main)).toBe(false);
    cooldowns.failed(main);
    cooldowns.succeeded(main);
    expect(cooldowns.isCooling(main)).toBe(false);
  });

  it("benches for the provider's Retry-After instead, up to the maximum", () => {
    let now = 0;
    const cooldowns = createCooldowns({ cooldownMs: 100, maxRetryAfterMs: 5_000, now: () => now });
    cooldowns.failed(main, 2_000);
    now = 1_999;
    expect(cooldowns.isCooling(main)).toBe(true);
    now = 2_000;
    expect(cooldowns.isCooling(main)).toBe(false);
    cooldowns.failed(main, 3_600_000);
    now += 5_000;
    expect(cooldowns.isCooling(main)).toBe(false);
  });

  it('never cools with a span of 0, not even for a Retry-After', () => {
    const cooldowns = createCooldowns({ cooldownMs: 0, maxRetryAfterMs: 5_000 });
    cooldowns.failed(main);
    cooldowns.failed(other, 2_000);
    expect(cooldowns.isCooling(main)).toBe(false);
    expect(cooldowns.isCooling(other)).toBe(false);
  });
});

describe('retryAfterMs', () => {
  it('reads seconds and HTTP dates; nothing else', () => {
    expect(retryAfterMs('2')).toBe(2_000);
    expect(retryAfterMs(['3'])).toBe(3_000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
    expect(retryAfterMs(undefined)).toBeUndefined();
    expect(retryAfterMs('soon')).toBeUndefined();
  });
});
