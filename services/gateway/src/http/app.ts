import type { IncomingMessage } from 'node:http';
import { AppError, renderMessagesError, renderOpenAIError } from '@tollgate/errors';
import { Hono } from 'hono';
import type { GatewayDependencies } from '../deps.ts';
import type { RequestLog } from '../proxy/request-log.ts';
import { countTokens, keyStatus, keyUsage, listModels } from '../proxy/unmetered.ts';
import { fromWebRequest, type InboundRequest } from '../request/inbound.ts';
import { providerTestHandler } from './provider-test.ts';
import type { Readiness } from './readiness.ts';
import { type ErrorStyle, startCycle } from './request-cycle.ts';

type Handler = (deps: GatewayDependencies, request: InboundRequest, log: RequestLog) => Promise<Response>;

/**
 * Runs one handler served through Hono: its failure rendered in the body style of its surface.
 * `route` names a path with a parameter in logs and metrics (one label, not one per id).
 */
function run(deps: GatewayDependencies, style: ErrorStyle, handler: Handler, route?: string) {
  return async (c: {
    req: { raw: Request; path: string; method: string };
    env: unknown;
  }): Promise<Response> => {
    // @hono/node-server's bindings: the Node request, for the socket's peer address.
    const peer = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket.remoteAddress;
    const path = route ?? c.req.path;
    const cycle = startCycle(deps, c.req.method, path, c.req.raw.headers.get('traceparent'), style);
    let response: Response;
    let code: string | undefined;
    try {
      response = await cycle.run(() => handler(deps, fromWebRequest(c.req.raw, peer), cycle.log));
    } catch (error) {
      const failure = cycle.fail(error);
      code = failure.code;
      response = Response.json(failure.body, { status: failure.status, headers: failure.headers });
    }
    response.headers.set('x-request-id', cycle.log.requestId);
    deps.metrics?.firstByte(cycle.log.path, performance.now() - cycle.started);
    cycle.end(response.status, code);
    return response;
  };
}

/**
 * The gateway's routes other than the metered ones (served by metered-routes.ts straight from
 * Node's server): health, readiness, count_tokens, models and key status.
 */
export function createGatewayApp(deps: GatewayDependencies, options: { readiness?: Readiness } = {}) {
  const app = new Hono();

  // No credential; says only that this process is up.
  app.get('/health', (c) => c.json({ status: 'ok' }));
  // Liveness: restart only a process that cannot answer at all.
  app.get('/livez', (c) => c.json({ status: 'ok' }));
  // Readiness: take the gateway out of rotation while it cannot reach the control plane or Redis.
  app.get('/readyz', async (c) => {
    if (!options.readiness) return c.json({ status: 'ready', checks: {} });
    const report = await options.readiness.check();
    return c.json(
      { status: report.ready ? 'ready' : 'not_ready', checks: report.checks },
      report.ready ? 200 : 503,
    );
  });

  app.post('/v1/messages/count_tokens', run(deps, 'messages', countTokens));
  app.get('/v1/models', run(deps, 'openai', listModels));
  app.get('/v1/key/status', run(deps, 'openai', keyStatus));
  app.get('/v1/key/usage/:requestId', run(deps, 'openai', keyUsage, '/v1/key/usage/{request_id}'));
  // The admin's "test connection", asked by the control plane with its service token.
  app.post('/internal/v1/providers/test', providerTestHandler(deps));

  // Codex opens a WebSocket on /v1/responses first when its provider allows it: 426 makes it
  // use HTTP at once (a 404 makes it retry first). Other GETs there are unknown routes.
  app.get('/v1/responses', (c) => {
    if (c.req.header('upgrade')?.toLowerCase() !== 'websocket') return c.notFound();
    const rendered = renderOpenAIError(new AppError('websocket_not_supported'));
    return c.json(rendered.body, 426);
  });

  // In the body style of the surface the path belongs to: the messages style under /v1/messages.
  app.notFound((c) => {
    const rendered = isMessagesPath(c.req.path)
      ? renderMessagesError(new AppError('unknown_route'))
      : renderOpenAIError(new AppError('unknown_route'));
    return c.json(rendered.body, 404);
  });
  app.onError((error, c) => {
    deps.logger.error({ err: error, path: c.req.path }, 'unhandled error');
    const rendered = renderOpenAIError(new AppError('server_error'));
    return c.json(rendered.body, 500);
  });
  return app;
}

function isMessagesPath(path: string): boolean {
  return path === '/v1/messages' || path.startsWith('/v1/messages/');
}
