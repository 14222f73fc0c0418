import { describe, expect, it } from 'vitest';
import { ROOT } from '../src/processes.ts';
import { findSleepSites, sleepSitesIn } from '../src/sleeps.ts';

/**
 * No test waits a fixed time without saying why: what the stack can announce (settled, events
 * delivered) is waited for through its hook, and a timer stays only where real time is the thing
 * tested, with the reason on its line or the line above. See docs/development/tests.md.
 */
describe('sleeps in tests', () => {
  it('each says why it is a timer and not a wait for an event', () => {
    const unexplained = findSleepSites(ROOT)
      // This file's examples below are text, not sleeps.
      .filter((site) => !site.reasoned && site.file !== 'packages/test-harness/test/sleeps.test.ts')
      .map((site) => `${site.file}:${site.line}: ${site.text}`);
    expect(unexplained, 'give the reason in a comment, or wait for the event instead').toEqual([]);
  });

  it('finds the timers, sleep helpers and fixed Playwright waits, and reads the reason beside them', () => {
    const text = [
      'const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));',
      'await sleep(100);',
      '// Real time: the window expires.',
      'await new Promise((resolve) => setTimeout(resolve, 1_000));',
      'setTimeout(() => controller.abort(), 50); // the client leaves mid-call',
      'await page.waitForTimeout(500);',
      'stream.pause();',
      'await delay(10);',
    ].join('\n');
    expect(sleepSitesIn('x.test.ts', text).map(({ line, reasoned }) => [line, reasoned])).toEqual([
      [2, false],
      [4, true],
      [5, true],
      [6, false],
      [8, false],
    ]);
  });
});
