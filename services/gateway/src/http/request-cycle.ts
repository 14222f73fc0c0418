import { randomUUID } from 'node:crypto';
import { renderMessagesError, renderOpenAIError, toAppError } from '@tollgate/errors';
import type { RequestSpan } from '@tollgate/service-kit';
import type { GatewayDependencies } from '../deps.ts';
import type { RequestLog } from '../proxy/request-log.ts';

export type ErrorStyle = 'messages' | 'openai';

/**
 * One request's bookkeeping, the same whichever server delivered it: a request id, the client's
 * trace continued (or one started), and at the end one access-log line, the request metric and
 * the span closed. Only server faults are logged as errors; the path is logged without its query.
 */
export interface RequestCycle {
  log: RequestLog;
  started: number;
  /** Runs the handler inside the request's span, when tracing is on. */
  run<T>(fn: () => Promise<T>): Promise<T>;
  /** The failure as the client gets it, in the body style of its surface. */
  fail(error: unknown): { status: number; headers: Record<string, string>; body: object; code: string };
  end(status: number, code: string | undefined): void;
}

export function startCycle(
  deps: GatewayDependencies,
  method: string,
  path: string,
  traceparent: string | null | undefined,
  style: ErrorStyle,
): RequestCycle {
  const started = performance.now();
  const log: RequestLog = { requestId: randomUUID(), method, path };
  const span: RequestSpan | undefined = deps.tracing?.start(`${method} ${path}`, traceparent);
  if (span) log.traceId = span.traceId;
  return {
    log,
    started,
    run: (fn) => (span && deps.tracing ? deps.tracing.run(span, fn) : fn()),
    fail(error) {
      const appError = toAppError(error);
      if (appError.status >= 500 && appError.code === 'server_error') {
        deps.logger.error({ err: error, ...log }, 'request failed');
      }
      const rendered = style === 'messages' ? renderMessagesError(appError) : renderOpenAIError(appError);
      return { ...rendered, code: appError.code };
    },
    end(status, code) {
      log.ms = Math.round((performance.now() - started) * 10) / 10;
      deps.metrics?.request(log.path, log.alias, status, code, log.ms);
      span?.end({ 'http.response.status_code': status, ...(code ? { 'tollgate.code': code } : {}) });
      deps.logger.info({ ...log, status, ...(code ? { code } : {}) }, 'request');
    },
  };
}
