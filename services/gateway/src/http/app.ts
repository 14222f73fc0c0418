import { randomUUID } from 'node:crypto';
import { AppError, renderMessagesError, renderOpenAIError, toAppError } from '@tollgate/errors';
import type { MeteredSurface } from '@tollgate/schemas';
import { Hono } from 'hono';
import type { GatewayDependencies } from '../deps.ts';
import { timedFirstByte } from '../metrics/instrument.ts';
import { handleMetered } from '../proxy/metered.ts';
import type { RequestLog } from '../proxy/request-log.ts';
import { countTokens, keyStatus, listModels } from '../proxy/unmetered.ts';
import type { Readiness } from './readiness.ts';

type ErrorStyle = 'messages' | 'openai';
type Handler = (deps: GatewayDependencies, request: Request, log: RequestLog) => Promise<Response>;

/**
 * Runs one handler: renders any failure in the body style of its surface (messages-style on
 * /v1/messages and count_tokens, openai-style elsewhere) and writes one access-log line. Only
 * server faults are logged as errors; the path is logged without its query string.
 */
function run(deps: GatewayDependencies, style: ErrorStyle, handler: Handler) {
  return async (c: { req: { raw: Request; path: string; method: string } }): Promise<Response> => {
    const started = performance.now();
    const log: RequestLog = { requestId: randomUUID(), method: c.req.method, path: c.req.path };
    // The client's trace continues here (or one starts); calls made for it carry this span.
    const span = deps.tracing?.start(`${c.req.method} ${c.req.path}`, c.req.raw.headers.get('traceparent'));
    if (span) log.traceId = span.traceId;
    let response: Response;
    let code: string | undefined;
    try {
      response = await (span && deps.tracing
        ? deps.tracing.run(span, () => handler(deps, c.req.raw, log))
        : handler(deps, c.req.raw, log));
    } catch (error) {
      const appError = toAppError(error);
      code = appError.code;
      if (appError.status >= 500 && appError.code === 'server_error') {
        deps.logger.error({ err: error, ...log }, 'request failed');
      }
      const rendered = style === 'messages' ? renderMessagesError(appError) : renderOpenAIError(appError);
      response = Response.json(rendered.body, { status: rendered.status, headers: rendered.headers });
    }
    response.headers.set('x-request-id', log.requestId);
    log.ms = Math.round((performance.now() - started) * 10) / 10;
    deps.metrics?.request(log.path, log.alias, response.status, code, log.ms);
    response = timedFirstByte(deps.metrics, log.path, started, response);
    span?.end({ 'http.response.status_code': response.status, ...(code ? { 'tollgate.code': code } : {}) });
    deps.logger.info({ ...log, status: response.status, ...(code ? { code } : {}) }, 'request');
    return response;
  };
}

function metered(surface: MeteredSurface): Handler {
  return (deps, request, log) => handleMetered(deps, request, surface, log);
}

/** The gateway's HTTP surface. */
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

  app.post('/v1/messages', run(deps, 'messages', metered('messages')));
  app.post('/v1/messages/count_tokens', run(deps, 'messages', countTokens));
  app.post('/v1/chat/completions', run(deps, 'openai', metered('chat_completions')));
  app.post('/v1/responses', run(deps, 'openai', metered('responses')));
  app.get('/v1/models', run(deps, 'openai', listModels));
  app.get('/v1/key/status', run(deps, 'openai', keyStatus));

  app.notFound((c) => {
    const error = new AppError('invalid_request', { message: `No route ${c.req.method} ${c.req.path}.` });
    return c.json({ error: { message: error.message, type: 'not_found_error', code: 'not_found' } }, 404);
  });
  app.onError((error, c) => {
    deps.logger.error({ err: error, path: c.req.path }, 'unhandled error');
    const rendered = renderOpenAIError(new AppError('server_error'));
    return c.json(rendered.body, 500);
  });
  return app;
}
