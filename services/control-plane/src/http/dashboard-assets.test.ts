import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../../test/context.ts';

let folder: string;
let built: TestContext;
let missing: TestContext;
const script = `console.log(${JSON.stringify('x'.repeat(4000))});`;

beforeAll(async () => {
  folder = await mkdtemp(path.join(tmpdir(), 'dashboard-assets-'));
  await mkdir(path.join(folder, 'assets'));
  await writeFile(path.join(folder, 'index.html'), '<!doctype html><title>app</title><div id="root"></div>');
  await writeFile(path.join(folder, 'assets/index-abc123.js'), script);
  built = await createTestContext('dashboard-assets', { DASHBOARD_DIR: folder });
  missing = await createTestContext('dashboard-missing', {
    DASHBOARD_DIR: path.join(folder, 'nothing-here'),
  });
});
afterAll(async () => {
  await built.close();
  await missing.close();
  await rm(folder, { recursive: true, force: true });
});

describe('the dashboard assets', () => {
  it('answers every page path with index.html, never cached, and the API paths with the API', async () => {
    for (const page of ['/', '/keys', '/orders/6f1c2a3e-0000-4000-8000-000000000000', '/status']) {
      const response = await built.publicApp.request(page);
      expect(response.status).toBe(200);
      expect(response.headers.get('cache-control')).toBe('no-cache');
      expect(await response.text()).toContain('<div id="root">');
    }
    const api = await built.publicApp.request('/api/v1/health');
    expect(await api.json()).toEqual({ data: { status: 'ok' } });
  });

  it('serves hashed files for a year, gzipped when the browser accepts it, and a missing one as 404', async () => {
    const plain = await built.publicApp.request('/assets/index-abc123.js');
    expect(plain.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(await plain.text()).toBe(script);

    const zipped = await built.publicApp.request('/assets/index-abc123.js', {
      headers: { 'accept-encoding': 'gzip, br' },
    });
    expect(zipped.headers.get('content-encoding')).toBe('gzip');
    expect(gunzipSync(Buffer.from(await zipped.arrayBuffer())).toString()).toBe(script);

    const gone = await built.publicApp.request('/assets/index-old999.js');
    expect(gone.status).toBe(404);
    expect(gone.headers.get('content-type')).toMatch(/json/);
  });

  it('says how to build the dashboard when it is not built, and keeps serving the API', async () => {
    const page = await missing.publicApp.request('/keys');
    expect(page.status).toBe(503);
    expect(await page.text()).toContain('pnpm build');
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect((await missing.publicApp.request('/api/v1/health')).status).toBe(200);
  });
});
