import { type Dirent, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Finds the places where a test waits a fixed time instead of for what it waits for: a timer
 * (`setTimeout`, `setInterval`), a call of a sleep helper (`sleep(`, `pause(`, `delay(`), or
 * Playwright's `waitForTimeout`. A test may do so only where real time is the thing tested (a
 * window expiring, a timeout), and says so in a comment on that line or the line above; anything
 * the stack can announce (settled, events delivered) is waited for through its hook instead.
 */
export interface SleepSite {
  file: string;
  line: number;
  text: string;
  /** A comment on the line or the line above gives the reason. */
  reasoned: boolean;
}

const TIMER = /\b(setTimeout|setInterval|waitForTimeout)\(|(?<![\w.])(sleep|pause|delay)\(/;
/** The definition of a sleep helper: each call of it is a site of its own. */
const HELPER = /\b(const|function)\s+(sleep|pause|delay)\b/;
const COMMENT_LINE = /^\s*(\/\/|\/\*|\*)|\*\/\s*$/;

/** Test files and test support: `*.test.ts`, `test/` folders, test-e2e's and the harness's code. */
function isTestSource(relative: string): boolean {
  if (!/\.tsx?$/.test(relative)) return false;
  return (
    /\.test\.tsx?$/.test(relative) ||
    /(^|\/)test\//.test(relative) ||
    relative.startsWith('test-e2e/src/') ||
    relative.startsWith('packages/test-harness/src/')
  );
}

function walk(root: string, dir: string): string[] {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((entry) => {
    if (entry.name === 'node_modules' || entry.name.startsWith('.')) return [];
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return walk(root, full);
    return [path.relative(root, full).split(path.sep).join('/')];
  });
}

/** Every sleep site of one file's text. */
export function sleepSitesIn(file: string, text: string): SleepSite[] {
  const lines = text.split('\n');
  const sites: SleepSite[] = [];
  lines.forEach((line, index) => {
    if (!TIMER.test(line) || HELPER.test(line) || COMMENT_LINE.test(line)) return;
    const above = index > 0 ? lines[index - 1]! : '';
    const reasoned = line.includes('//') || COMMENT_LINE.test(above);
    sites.push({ file, line: index + 1, text: line.trim(), reasoned });
  });
  return sites;
}

/** Every sleep site in the test sources of the repository at `root`. */
export function findSleepSites(root: string): SleepSite[] {
  return ['services', 'packages', 'test-e2e', 'scripts']
    .flatMap((top) => walk(root, path.join(root, top)))
    .filter(isTestSource)
    .flatMap((file) => sleepSitesIn(file, readFileSync(path.join(root, file), 'utf8')));
}
