import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.ts';
import { createTracing, parseTraceparent } from './tracing.ts';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

describe('parseTraceparent', () => {
  it('reads a version 00 header and its sampled flag', () => {
    expect(parseTraceparent(`00-${TRACE}-${PARENT}-01`)).toEqual({
      traceId: TRACE,
      parentId: PARENT,
      sampled: true,
    });
    expect(parseTraceparent(`00-${TRACE}-${PARENT}-00`)?.sampled).toBe(false);
    // A later version may append fields; its first four are read the same way.
    expect(parseTraceparent(`01-${TRACE}-${PARENT}-01-extra`)?.traceId).toBe(TRACE);
  });

  it('refuses what the W3C format forbids', () => {
    for (const bad of [
      undefined,
      '',
      'garbage',
      `ff-${TRACE}-${PARENT}-01`,
      `00-${'0'.repeat(32)}-${PARENT}-01`,
      `00-${TRACE}-${'0'.repeat(16)}-01`,
      `00-${TRACE.toUpperCase()}-${PARENT}-01`,
      `00-${TRACE}-${PARENT}-01-extra`,
    ]) {
      expect(parseTraceparent(bad), String(bad)).toBeNull();
    }
  });
});

describe('createTracing without an endpoint', () => {
  it('continues the caller trace, makes a span of its own and hands it to calls made inside run()', async () => {
    const tracing = await createTracing({
      serviceName: 'test',
      logger: createLogger({ name: 'test', level: 'silent' }),
    });
    expect(tracing.exporting).toBe(false);
    const span = tracing.start('GET /', `00-${TRACE}-${PARENT}-01`);
    expect(span.traceId).toBe(TRACE);
    expect(span.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(span.spanId).not.toBe(PARENT);
    expect(tracing.outgoing()).toBeUndefined();
    const inside = await tracing.run(span, async () => {
      // A real timer: the context must survive a macrotask boundary, not only a microtask.
      await new Promise((resolve) => setTimeout(resolve, 1));
      return tracing.outgoing();
    });
    expect(inside).toBe(`00-${TRACE}-${span.spanId}-01`);
    const fresh = tracing.start('GET /', null);
    expect(fresh.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(fresh.traceId).not.toBe(TRACE);
  });

  it('gives every request fresh ids, also across refills of the id pool', async () => {
    const tracing = await createTracing({
      serviceName: 'test',
      logger: createLogger({ name: 'test', level: 'silent' }),
    });
    const ids = new Set<string>();
    // 1,000 requests use 24,000 random bytes: several refills of the 4,096-byte pool.
    for (let index = 0; index < 1000; index += 1) {
      const span = tracing.start('GET /', null);
      expect(span.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(span.spanId).toMatch(/^[0-9a-f]{16}$/);
      ids.add(span.traceId);
      ids.add(span.spanId);
    }
    expect(ids.size).toBe(2000);
  });
});
