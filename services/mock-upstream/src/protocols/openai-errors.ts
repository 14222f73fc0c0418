import type { IncomingHttpHeaders } from 'node:http';

/** Error body and credential check shared by the two OpenAI protocols. */

export function openAiErrorBody(status: number, message: string) {
  if (status === 401) {
    return { error: { message, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } };
  }
  if (status === 429)
    return { error: { message, type: 'requests', param: null, code: 'rate_limit_exceeded' } };
  const type = status >= 500 ? 'server_error' : 'invalid_request_error';
  return { error: { message, type, param: null, code: null } };
}

export function isBearer(headers: IncomingHttpHeaders, expectedApiKey: string): boolean {
  return headers.authorization === `Bearer ${expectedApiKey}`;
}

export const SERVER_ERROR_MESSAGE =
  'The server had an error while processing your request. Sorry about that!';
