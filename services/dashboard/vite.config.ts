import { defineConfig } from 'vite';

/**
 * The dashboard is served by the control plane from the same origin as /api/v1, so the build has
 * no base URL of its own. `pnpm dev` proxies /api to a control plane on 8081.
 */
export default defineConfig({
  base: '/',
  build: { outDir: 'dist', assetsDir: 'assets', sourcemap: false, modulePreload: { polyfill: false } },
  server: { proxy: { '/api': 'http://127.0.0.1:8081' } },
});
