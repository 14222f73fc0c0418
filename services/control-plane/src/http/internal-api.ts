import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError, renderControlPlaneError } from '@tollgate/errors';
import type { Dependencies } from '../deps.ts';
import { apiKeysInternalRoutes } from '../modules/api-keys/api-keys.internal-routes.ts';
import { billingInternalRoutes } from '../modules/billing/billing.internal-routes.ts';
import { statusInternalRoutes } from '../modules/status/status.internal-routes.ts';
import { fieldErrorsOf } from './errors.ts';
import { createServiceTokenVerifier } from './service-token.ts';

interface InternalAnswer {
  status: number;
  body: unknown;
}

const MAX_BODY_BYTES = 16 * 1024 * 1024;

/**
 * The internal billing API: its own port, gateway only, a service token on every /internal/v1
 * route. Plain node:http with a table of routes rather than a framework: it serves two calls per
 * metered request, so it carries no per-request work it does not need. Errors use the
 * control-plane body; only server faults are logged.
 */
export function createInternalApi(deps: Dependencies) {
  const verify = createServiceTokenVerifier(deps.config.internalTokenSecret);
  const routes = new Map(
    [...apiKeysInternalRoutes(), ...billingInternalRoutes(), ...statusInternalRoutes()].map((route) => [
      `${route.method} ${route.path}`,
      route,
    ]),
  );

  async function answer(
    method: string,
    path: string,
    authorization: string | undefined,
    bodyText: string,
  ): Promise<InternalAnswer> {
    try {
      if (method === 'GET' && path === '/internal/health')
        return { status: 200, body: { data: { status: 'ok' } } };
      if (!path.startsWith('/internal/v1/')) throw new AppError('not_found');
      if (!(await verify(authorization))) throw new AppError('unauthenticated');
      const route = routes.get(`${method} ${path.slice('/internal/v1'.length)}`);
      if (!route) throw new AppError('not_found');
      let input: unknown;
      if (route.input) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(bodyText);
        } catch {
          throw AppError.validation({ body: ['Send a valid JSON body.'] });
        }
        const result = route.input.safeParse(parsed);
        if (!result.success) throw AppError.validation(fieldErrorsOf(result.error));
        input = result.data;
      }
      return { status: 200, body: await route.handle(deps, input) };
    } catch (error) {
      const rendered = renderControlPlaneError(error);
      if (rendered.status >= 500) deps.logger.error({ err: error, method, path }, 'internal request failed');
      return { status: rendered.status, body: rendered.body };
    }
  }

  /** The node:http request listener of the internal port. */
  function listener(request: IncomingMessage, response: ServerResponse): void {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) request.destroy();
      else chunks.push(chunk);
    });
    request.on('end', () => {
      const path = (request.url ?? '/').split('?')[0] ?? '/';
      answer(
        request.method ?? 'GET',
        path,
        request.headers.authorization,
        Buffer.concat(chunks).toString('utf8'),
      ).then(({ status, body }) => {
        const text = JSON.stringify(body);
        response.writeHead(status, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(text),
        });
        response.end(text);
      });
    });
  }

  /** In-process call, for tests: the same routing, validation and rendering as over HTTP. */
  async function request(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    const { status, body } = await answer(
      init.method ?? 'GET',
      new URL(url, 'http://internal').pathname,
      headers.get('authorization') ?? undefined,
      typeof init.body === 'string' ? init.body : '',
    );
    return Response.json(body, { status });
  }

  return { listener, request };
}

export type InternalApi = ReturnType<typeof createInternalApi>;
