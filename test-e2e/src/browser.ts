/**
 * The dashboard in a real browser: Debian's Chromium driven by playwright-core (no browser
 * download), an axe-core check per screen, screenshots for the README, the built assets.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { AxeBuilder } from '@axe-core/playwright';
import { ROOT, run } from '@tollgate/test-harness';
import { type Browser, chromium, type Page } from 'playwright-core';
import type { E2EStack } from './stack.ts';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const DASHBOARD = path.join(ROOT, 'services/dashboard');
/**
 * The README's pictures are replaced only on request (UPDATE_SCREENSHOTS=1), so a test run leaves
 * the checkout as it found it; otherwise the screenshots are still taken, into a temporary folder.
 */
export const SCREENSHOTS =
  process.env.UPDATE_SCREENSHOTS === '1'
    ? path.join(ROOT, 'docs/screenshots')
    : path.join(tmpdir(), 'tollgate-screenshots');

function newestChange(entry: string): number {
  const stats = statSync(entry);
  if (!stats.isDirectory()) return stats.mtimeMs;
  return Math.max(stats.mtimeMs, ...readdirSync(entry).map((name) => newestChange(path.join(entry, name))));
}

/**
 * Builds the dashboard when its assets are missing or older than its sources (the control plane
 * reads them at start), so the browser never tests a stale build.
 */
export async function ensureDashboardBuilt(): Promise<void> {
  const index = path.join(DASHBOARD, 'dist/index.html');
  const sources = Math.max(
    newestChange(path.join(DASHBOARD, 'src')),
    newestChange(path.join(DASHBOARD, 'index.html')),
  );
  if (existsSync(index) && statSync(index).mtimeMs >= sources) return;
  // The test runner sets NODE_ENV=test; the served build must be the production one (minified React).
  await run(process.execPath, [path.join(DASHBOARD, 'node_modules/vite/bin/vite.js'), 'build'], {
    cwd: DASHBOARD,
    env: { NODE_ENV: 'production' },
  });
}

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM_PATH}: the dashboard tests need it. ` +
        "Install Debian's package (sudo apt-get install -y chromium) or set CHROMIUM_PATH.",
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-gpu',
      '--disable-quic',
    ],
  });
}

/** Serious and critical axe violations of the page as it is now (none is the pass). */
export async function accessibilityViolations(page: Page): Promise<string[]> {
  const result = await new AxeBuilder({ page }).analyze();
  return result.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map(
      (violation) =>
        `${violation.id} (${violation.impact}): ${violation.help} at ${violation.nodes
          .slice(0, 3)
          .map((node) => node.target.join(' '))
          .join(', ')}`,
    );
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await mkdir(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Bytes of JavaScript the first page loads (its module scripts and preloads), gzipped. */
export async function initialJavaScriptGzipBytes(baseUrl: string): Promise<number> {
  const html = await (await fetch(`${baseUrl}/`)).text();
  const sources = [
    ...html.matchAll(/<(?:script[^>]*\bsrc|link[^>]*rel="modulepreload"[^>]*\bhref)="([^"]+)"/g),
  ].map((match) => match[1] ?? '');
  if (sources.length === 0) throw new Error(`no script in the dashboard's index.html: ${html}`);
  let total = 0;
  for (const source of sources) {
    const body = Buffer.from(await (await fetch(new URL(source, baseUrl))).arrayBuffer());
    total += gzipSync(body, { level: 9 }).length;
  }
  return total;
}

/** The newest sign-up code mailed to `email` (the stack keeps mail in the outbox). */
export async function signUpCodeFor(stack: E2EStack, email: string): Promise<string> {
  const { rows } = await stack.db.query<{ body_text: string }>(
    `select body_text from outbox_emails where recipient = $1 and kind = 'register_code'
     order by created_at desc limit 1`,
    [email],
  );
  const code = /\b(\d{6})\b/.exec(rows[0]?.body_text ?? '')?.[1];
  if (!code) throw new Error(`no sign-up code was mailed to ${email}`);
  return code;
}

export async function readText(file: string): Promise<string> {
  return readFile(file, 'utf8');
}
