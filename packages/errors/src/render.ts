import { type AppError, toAppError } from './app-error.ts';

export interface RenderedError<Body> {
  status: number;
  headers: Record<string, string>;
  body: Body;
}

export interface ControlPlaneErrorBody {
  message: string;
  code: string;
  errors?: Record<string, string[]>;
}

export interface MessagesErrorBody {
  type: 'error';
  error: { type: string; message: string; service_code: string };
}

export interface OpenAIErrorBody {
  error: { message: string; type: string; code: string };
}

/** Short Retry-After for concurrency refusals when the caller gave none. */
const DEFAULT_CONCURRENCY_RETRY_AFTER_SECONDS = 1;

function headersFor(error: AppError): Record<string, string> {
  return { ...error.headers, ...retryAfterOf(error) };
}

function retryAfterOf(error: AppError): Record<string, string> {
  if (error.code === 'rate_limit_exceeded' && error.retryAfterSeconds !== undefined) {
    return { 'retry-after': String(Math.max(1, Math.ceil(error.retryAfterSeconds))) };
  }
  if (error.code === 'payment_pending' && error.retryAfterSeconds !== undefined) {
    return { 'retry-after': String(Math.max(1, Math.ceil(error.retryAfterSeconds))) };
  }
  if (error.code === 'concurrency_limit_exceeded') {
    const seconds = error.retryAfterSeconds ?? DEFAULT_CONCURRENCY_RETRY_AFTER_SECONDS;
    return { 'retry-after': String(Math.max(1, Math.ceil(seconds))) };
  }
  return {};
}

/** Control-plane body: `{message, code, errors?}`. */
export function renderControlPlaneError(thrown: unknown): RenderedError<ControlPlaneErrorBody> {
  const error = toAppError(thrown);
  const body: ControlPlaneErrorBody = { message: error.message, code: error.code };
  if (error.fieldErrors) body.errors = error.fieldErrors;
  return { status: error.status, headers: headersFor(error), body };
}

/** Messages-style body (/v1/messages, /v1/messages/count_tokens). */
export function renderMessagesError(thrown: unknown): RenderedError<MessagesErrorBody> {
  const error = toAppError(thrown);
  return {
    status: error.status,
    headers: headersFor(error),
    body: { type: 'error', error: { type: error.type, message: error.message, service_code: error.code } },
  };
}

/** OpenAI-style body (/v1/responses, /v1/chat/completions, /v1/models, /v1/key/status). */
export function renderOpenAIError(thrown: unknown): RenderedError<OpenAIErrorBody> {
  const error = toAppError(thrown);
  return {
    status: error.status,
    headers: headersFor(error),
    body: { error: { message: error.message, type: error.type, code: error.code } },
  };
}
