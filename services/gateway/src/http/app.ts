import { Hono } from 'hono';
import type { GatewayDependencies } from '../deps.ts';

export interface GatewayEnvironment {
  Variables: { deps: GatewayDependencies };
}

/** The gateway's HTTP surface. */
export function createGatewayApp(deps: GatewayDependencies) {
  const app = new Hono<GatewayEnvironment>();
  app.use('*', async (c, next) => {
    c.set('deps', deps);
    await next();
  });
  // No credential; says only that this process is up.
  app.get('/health', (c) => c.json({ status: 'ok' }));
  return app;
}
