/** Fixtures of the reseller tests: signed-in members of every kind and management-key calls. */

import { setAccountRoles } from '../src/modules/accounts/accounts.service.ts';
import { seedCatalog } from './billing.ts';
import { createClient, latestEmailText, type TestClient, uniqueEmail } from './client.ts';
import type { TestContext } from './context.ts';

export { seedCatalog };

export type Member = TestClient & { id: string; email: string; password: string };

/** A signed-up, signed-in account, optionally with the admin or reseller permission. */
export async function member(
  context: TestContext,
  label: string,
  roles: { admin?: boolean; reseller?: boolean } = {},
): Promise<Member> {
  const client = createClient(context);
  const email = uniqueEmail(label);
  const password = `pw-${Math.random().toString(36).slice(2)}-reseller`;
  const { id } = await client.signUp(email, password);
  if (roles.admin || roles.reseller) await setAccountRoles(context.deps.db, id, roles);
  await client.logIn(email, password);
  return Object.assign(client, { id, email, password });
}

export interface ManagementResponse {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: bodies are checked by the tests' assertions
  body: any;
}

/** A call as reseller software makes it: Authorization: Bearer <management key>, no cookies. */
export async function managementCall(
  context: TestContext,
  secret: string | null,
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<ManagementResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (secret) headers.authorization = `Bearer ${secret}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await context.publicApp.request(`/api/v1${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
}

/** Every management-key secret created in this test file, to scan logs for. */
export const managementSecrets: string[] = [];

/** Creates a management key through the reseller's session; returns its id and secret. */
export async function createManagementKey(
  reseller: TestClient,
  scopes: string[],
  extra: { expiresAt?: string; name?: string } = {},
): Promise<{ id: string; secret: string }> {
  const response = await reseller.request('POST', '/reseller/management-keys', {
    body: {
      name: extra.name ?? 'software',
      scopes,
      ...(extra.expiresAt ? { expiresAt: extra.expiresAt } : {}),
    },
  });
  if (response.status !== 201)
    throw new Error(`management key: ${response.status} ${JSON.stringify(response.body)}`);
  managementSecrets.push(response.body.data.secret);
  return { id: response.body.data.key.id, secret: response.body.data.secret };
}

/** A reseller made so by the admin over HTTP, funded by admin grants with notes. */
export async function fundedReseller(
  context: TestContext,
  admin: TestClient,
  label: string,
  funding: { packages?: number; credits?: string } = {},
): Promise<Member> {
  const account = await member(context, label);
  const promoted = await admin.request('PATCH', `/admin/accounts/${account.id}/roles`, {
    body: { reseller: true },
  });
  if (promoted.status !== 200) throw new Error(`promotion answered ${promoted.status}`);
  for (let index = 0; index < (funding.packages ?? 0); index += 1) {
    const granted = await admin.request('POST', `/admin/accounts/${account.id}/grants`, {
      body: { packageId: 'small', note: 'reseller stock' },
    });
    if (granted.status !== 201) throw new Error(`package grant answered ${granted.status}`);
  }
  if (funding.credits) {
    const granted = await admin.request('POST', `/admin/accounts/${account.id}/grants`, {
      body: { credits: funding.credits, note: 'reseller credit' },
    });
    if (granted.status !== 201) throw new Error(`credit grant answered ${granted.status}`);
  }
  return account;
}

/** The token of the latest invitation emailed to an address. */
export async function invitationToken(context: TestContext, email: string): Promise<string> {
  const text = await latestEmailText(context, email, 'reseller_invitation');
  const token = /token=([0-9a-f]{64})/.exec(text)?.[1];
  if (!token) throw new Error(`no invitation token in the email to ${email}`);
  return token;
}

/** Accepts the latest invitation to an address (null: without a password, as an existing account may). */
export async function acceptInvitation(
  context: TestContext,
  email: string,
  password: string | null = `pw-${Math.random().toString(36).slice(2)}-invited`,
) {
  const token = await invitationToken(context, email);
  return createClient(context).request('POST', '/auth/accept-invitation', {
    body: password === null ? { token } : { token, password },
  });
}

/** A customer invited by the reseller in its session area, who accepted; its id. */
export async function customerOf(
  context: TestContext,
  reseller: TestClient,
  label = 'customer',
): Promise<string> {
  const email = uniqueEmail(label);
  const invited = await reseller.request('POST', '/reseller/customers', { body: { email } });
  if (invited.status !== 201) throw new Error(`invitation answered ${invited.status}`);
  const accepted = await acceptInvitation(context, email);
  if (accepted.status !== 200) throw new Error(`acceptance answered ${accepted.status}`);
  const account = await context.deps.db
    .selectFrom('accounts')
    .select('id')
    .where('email', '=', email)
    .executeTakeFirstOrThrow();
  return account.id;
}
