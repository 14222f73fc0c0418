import createClient from 'openapi-fetch';
import { csrfToken, failureOf, unreachable } from './api.ts';
import type { components, paths } from './api-schema.d.ts';

/** The API's named schemas (`Schemas['ApiKey']`), as the OpenAPI document defines them. */
export type Schemas = components['schemas'];

/**
 * The typed API client (openapi-fetch over the generated types): same origin, the session cookie
 * sent by the browser, and on state-changing requests the CSRF token read from the readable cookie.
 */
export const client = createClient<paths>({
  baseUrl: '',
  credentials: 'same-origin',
  cache: 'no-store',
  headers: { accept: 'application/json' },
});

client.use({
  onRequest({ request }) {
    if (request.method === 'GET') return request;
    const token = csrfToken();
    if (token) request.headers.set('x-csrf-token', token);
    return request;
  },
});

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/**
 * What a call's `{data}` body carries, or the ApiError the dashboard shows (the service's code,
 * message and field errors; network_unreachable when the service could not be reached).
 */
export async function unwrap<T>(pending: Promise<Answer<T>>): Promise<DataOf<T>> {
  let answer: Answer<T>;
  try {
    answer = await pending;
  } catch {
    throw unreachable();
  }
  const { response } = answer;
  if (!response.ok)
    throw failureOf(response.status, answer.error ?? null, response.headers.get('retry-after'));
  return ((answer.data as { data?: unknown } | undefined)?.data ?? null) as DataOf<T>;
}

/** What a `{data: D}` body carries. */
export type DataOf<T> = T extends { data: infer D } ? D : null;
