/**
 * A customer as the product sees one: signs up on the control plane's HTTP API with the code from
 * the sign-up email, is funded by the operator's CLI, signs in and creates an inference key in
 * the dashboard API (session cookie plus X-CSRF-Token, like the browser app).
 */
import { randomBytes } from 'node:crypto';
import type { E2EStack } from './stack.ts';

interface ApiAnswer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: answers are checked by the callers' assertions
  body: any;
}

/** Cookie jar and CSRF token of one browser. */
export class DashboardSession {
  private readonly cookies = new Map<string, string>();
  private csrfToken: string | null = null;

  private readonly baseUrl: string;

  constructor(baseUrl: string) {
    this.baseUrl = baseUrl;
  }

  async request(method: string, path: string, body?: unknown): Promise<ApiAnswer> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.cookies.size > 0) {
      headers.cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    }
    if (this.csrfToken && method !== 'GET') headers['x-csrf-token'] = this.csrfToken;
    const response = await fetch(`${this.baseUrl}/api/v1${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const separator = pair.indexOf('=');
      const name = pair.slice(0, separator);
      const value = pair.slice(separator + 1);
      if (value === '' || /max-age=0/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : null };
  }

  async logIn(email: string, password: string): Promise<void> {
    const answer = await this.request('POST', '/auth/login', { email, password });
    if (answer.status !== 200)
      throw new Error(`login answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    this.csrfToken = answer.body.data.csrfToken;
  }
}

export interface KeyOptions {
  name?: string;
  scope?: string[];
  expiresAt?: string;
  limits?: Partial<{
    maxRequestBytes: number;
    maxOutputTokens: number;
    requestsPerMinute: number;
    concurrency: number;
  }>;
}

export interface Customer {
  email: string;
  accountId: string;
  dashboard: DashboardSession;
  createKey(options?: KeyOptions): Promise<{ secret: string; keyId: string }>;
  setKeyStatus(keyId: string, status: 'active' | 'disabled' | 'revoked'): Promise<void>;
  /** Issues a new secret for the key; the previous one stops working at once. */
  rotateKey(keyId: string): Promise<string>;
}

/** The newest sign-up code mailed to `email` (kept in the outbox when no SMTP server is set). */
async function registerCode(stack: E2EStack, email: string): Promise<string> {
  const { rows } = await stack.db.query<{ body_text: string }>(
    `select body_text from outbox_emails where recipient = $1 and kind = 'register_code'
     order by created_at desc limit 1`,
    [email],
  );
  const code = /\b(\d{6})\b/.exec(rows[0]?.body_text ?? '')?.[1];
  if (!code) throw new Error(`no sign-up code was mailed to ${email}`);
  return code;
}

/**
 * Accepts the newest reseller invitation mailed to `email` as its mailbox owner would (with a
 * password, as an address without an account must); the account id it is linked to.
 */
export async function acceptInvitation(stack: E2EStack, email: string): Promise<string> {
  const { rows } = await stack.db.query<{ body_text: string }>(
    `select body_text from outbox_emails where recipient = $1 and kind = 'reseller_invitation'
     order by created_at desc limit 1`,
    [email],
  );
  const token = /token=([0-9a-f]{64})/.exec(rows[0]?.body_text ?? '')?.[1];
  if (!token) throw new Error(`no invitation was mailed to ${email}`);
  const response = await fetch(`${stack.controlPlaneUrl}/api/v1/auth/accept-invitation`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token, password: `invited-${token.slice(0, 12)}` }),
  });
  if (response.status !== 200) throw new Error(`accept-invitation answered ${response.status}`);
  const account = await stack.db.query<{ id: string }>('select id from accounts where email = $1', [email]);
  return account.rows[0]?.id as string;
}

export interface Funding {
  credits?: bigint;
  packages?: string[];
}

/** Signs a new customer up on the dashboard API with the code from the sign-up email. */
async function signUp(dashboard: DashboardSession, stack: E2EStack, email: string, password: string) {
  const sent = await dashboard.request('POST', '/auth/register/code', { email });
  if (sent.status !== 202) throw new Error(`register/code answered ${sent.status}`);
  const created = await dashboard.request('POST', '/auth/register', {
    email,
    code: await registerCode(stack, email),
    password,
  });
  if (created.status !== 201) {
    throw new Error(`register answered ${created.status}: ${JSON.stringify(created.body)}`);
  }
  return created.body.data.id as string;
}

/**
 * A new customer with a funded account, signed in to the dashboard: signed up on the HTTP API
 * (or, with `byOperator`, created with the CLI's `create-account`), funded with the CLI's
 * `grant-credit` and `grant-package`. Keys are then created through the dashboard API.
 */
export async function signUpCustomer(
  stack: E2EStack,
  funding: Funding = {},
  options: { byOperator?: boolean } = {},
): Promise<Customer> {
  const email = `e2e-${randomBytes(6).toString('hex')}@example.test`;
  const password = `correct horse ${randomBytes(6).toString('hex')}`;
  const dashboard = new DashboardSession(stack.controlPlaneUrl);
  const accountId: string = options.byOperator
    ? (await stack.admin('create-account', email, '--password', password)).accountId
    : await signUp(dashboard, stack, email, password);

  if (funding.credits !== undefined) await stack.admin('grant-credit', email, String(funding.credits));
  for (const packageId of funding.packages ?? []) await stack.admin('grant-package', email, packageId);
  await dashboard.logIn(email, password);

  return {
    email,
    accountId,
    dashboard,
    async createKey(options = {}) {
      const answer = await dashboard.request('POST', '/me/api-keys', {
        name: options.name ?? 'e2e',
        ...(options.scope ? { scope: options.scope } : {}),
        ...(options.expiresAt ? { expiresAt: options.expiresAt } : {}),
        ...(options.limits ? { limits: options.limits } : {}),
      });
      if (answer.status !== 201) {
        throw new Error(`key creation answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      }
      return { secret: answer.body.data.secret, keyId: answer.body.data.key.id };
    },
    async rotateKey(keyId) {
      const answer = await dashboard.request('POST', `/me/api-keys/${keyId}/rotate`);
      if (answer.status !== 200) {
        throw new Error(`key rotation answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      }
      return answer.body.data.secret;
    },
    async setKeyStatus(keyId, status) {
      const answer = await dashboard.request('PATCH', `/me/api-keys/${keyId}/status`, { status });
      if (answer.status !== 200) {
        throw new Error(`key status change answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      }
    },
  };
}
