/**
 * Test helper (used by *.test.ts only): a browser-like client of the public app that keeps its
 * cookies, echoes the CSRF token, comes from its own address (tests run with TRUST_PROXY) and
 * records every body it received so tests can scan them for secrets.
 */
import { randomInt } from 'node:crypto';
import type { TestContext } from './context.ts';

export interface TestResponse<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
}

export interface TestClient {
  ip: string;
  csrfToken: string | null;
  sessionToken: string | null;
  // biome-ignore lint/suspicious/noExplicitAny: bodies are checked by the tests' assertions
  request<T = any>(
    method: string,
    path: string,
    options?: { body?: unknown; headers?: Record<string, string>; csrf?: boolean },
  ): Promise<TestResponse<T>>;
  signUp(email: string, password: string): Promise<{ id: string }>;
  // biome-ignore lint/suspicious/noExplicitAny: bodies are checked by the tests' assertions
  logIn(email: string, password: string): Promise<TestResponse<any>>;
}

/** Every body any client received in this test file. */
export const receivedBodies: string[] = [];

export function randomIp(): string {
  return `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;
}

export function uniqueEmail(label: string): string {
  return `${label}-${randomInt(1e9)}@example.test`;
}

export async function latestEmailText(context: TestContext, to: string, kind: string): Promise<string> {
  const row = await context.deps.db
    .selectFrom('outbox_emails')
    .select('body_text')
    .where('recipient', '=', to)
    .where('kind', '=', kind)
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (!row) throw new Error(`no ${kind} email to ${to}`);
  return row.body_text;
}

export async function latestRegisterCode(context: TestContext, to: string): Promise<string> {
  const match = /\b(\d{6})\b/.exec(await latestEmailText(context, to, 'register_code'));
  if (!match?.[1]) throw new Error('no code in email');
  return match[1];
}

export function createClient(
  context: TestContext,
  options: { ip?: string; userAgent?: string } = {},
): TestClient {
  const cookies = new Map<string, string>();
  const client: TestClient = {
    ip: options.ip ?? randomIp(),
    csrfToken: null,
    sessionToken: null,

    async request(method, path, requestOptions = {}) {
      const headers: Record<string, string> = {
        'x-forwarded-for': client.ip,
        'user-agent': options.userAgent ?? 'test-browser/1.0',
        ...requestOptions.headers,
      };
      if (cookies.size > 0)
        headers.cookie = [...cookies].map(([name, value]) => `${name}=${value}`).join('; ');
      if (requestOptions.csrf !== false && client.csrfToken) headers['x-csrf-token'] = client.csrfToken;
      if (requestOptions.body !== undefined) headers['content-type'] = 'application/json';
      const response = await context.publicApp.request(`/api/v1${path}`, {
        method,
        headers,
        body: requestOptions.body === undefined ? undefined : JSON.stringify(requestOptions.body),
      });
      for (const line of response.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const [name, ...rest] = (pair ?? '').split('=');
        if (!name) continue;
        const value = rest.join('=');
        if (value === '' || /max-age=0/i.test(line)) cookies.delete(name);
        else cookies.set(name, value);
        if (name.endsWith('tollgate_session')) client.sessionToken = value || null;
        if (name.endsWith('tollgate_csrf')) client.csrfToken = value || null;
      }
      const text = await response.text();
      receivedBodies.push(text);
      return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
    },

    async signUp(email, password) {
      const sent = await client.request('POST', '/auth/register/code', { body: { email } });
      if (sent.status !== 202) throw new Error(`register/code answered ${sent.status}`);
      const code = await latestRegisterCode(context, email);
      const created = await client.request('POST', '/auth/register', { body: { email, code, password } });
      if (created.status !== 201)
        throw new Error(`register answered ${created.status}: ${JSON.stringify(created.body)}`);
      return created.body.data;
    },

    async logIn(email, password) {
      return client.request('POST', '/auth/login', { body: { email, password } });
    },
  };
  return client;
}

/** Strings that must never appear in a response body or a log line. */
export function expectNowhere(
  context: TestContext,
  secrets: Array<string | null>,
  bodies: string[] = receivedBodies,
) {
  const haystacks = [...context.logLines, ...bodies];
  for (const secret of secrets) {
    if (!secret) continue;
    const found = haystacks.find((text) => text.includes(secret));
    if (found) throw new Error(`a secret leaked into: ${found.slice(0, 200)}`);
  }
}
