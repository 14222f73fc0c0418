import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createClient,
  expectNowhere,
  latestEmailText,
  latestRegisterCode,
  uniqueEmail,
} from '../../../test/client.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';

let context: TestContext;
const passwords: string[] = [];
const sessionTokens: Array<string | null> = [];
const csrfTokens: Array<string | null> = [];

beforeAll(async () => {
  context = await createTestContext('auth-routes', { TRUST_PROXY: 'true' });
});
afterAll(async () => {
  await context.publicApp.mailer.drain();
  // Nothing secret in any log line; no password or session token in any body.
  expectNowhere(context, [...passwords, ...sessionTokens, ...csrfTokens], []);
  expectNowhere(context, [...passwords, ...sessionTokens]);
  await context.close();
});

function newPassword(): string {
  const password = `pw-${Math.random().toString(36).slice(2)}-correct horse`;
  passwords.push(password);
  return password;
}

describe('sign-up', () => {
  it('sends a code, consumes it once, and creates the account', async () => {
    const client = createClient(context);
    const email = uniqueEmail('signup');
    const password = newPassword();
    const sent = await client.request('POST', '/auth/register/code', { body: { email } });
    expect(sent.status).toBe(202);
    expect(sent.body.data.sent).toBe(true);
    const code = await latestRegisterCode(context, email);

    const created = await client.request('POST', '/auth/register', {
      body: { email, code, password, displayName: 'Ada' },
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ email, displayName: 'Ada', status: 'active', isAdmin: false });
    expect(JSON.stringify(created.body)).not.toContain('password');

    const again = await client.request('POST', '/auth/register', { body: { email, code, password } });
    expect(again.status).toBe(422);
    expect(again.body.code).toBe('validation_failed');
    expect(again.body.errors.code).toHaveLength(1);
  });

  it('stores the code hashed, never as typed', async () => {
    const client = createClient(context);
    const email = uniqueEmail('hashed');
    await client.request('POST', '/auth/register/code', { body: { email } });
    const code = await latestRegisterCode(context, email);
    const row = await context.deps.db
      .selectFrom('email_codes')
      .select('code_hash')
      .where('email', '=', email)
      .executeTakeFirstOrThrow();
    expect(row.code_hash.length).toBe(32);
    expect(row.code_hash.toString('latin1')).not.toContain(code);
  });

  it('answers per-field validation errors', async () => {
    const client = createClient(context);
    const response = await client.request('POST', '/auth/register', {
      body: { email: 'not-an-email', code: '12', password: 'short' },
    });
    expect(response.status).toBe(422);
    expect(response.body.code).toBe('validation_failed');
    expect(Object.keys(response.body.errors).sort()).toEqual(['code', 'email', 'password']);
  });

  it('accepts long passwords whole: a change past any truncation point is a different password', async () => {
    const client = createClient(context);
    const email = uniqueEmail('long');
    const password = `${'a'.repeat(200)}-tail-${Math.random()}`;
    passwords.push(password);
    await client.signUp(email, password);
    expect((await client.logIn(email, `${'a'.repeat(200)}-tail-other`)).status).toBe(401);
    expect((await client.logIn(email, password)).status).toBe(200);
  });

  it('kills a code after too many wrong guesses', async () => {
    const client = createClient(context);
    const email = uniqueEmail('guess');
    await client.request('POST', '/auth/register/code', { body: { email } });
    const code = await latestRegisterCode(context, email);
    const wrong = code === '000000' ? '111111' : '000000';
    const max = context.deps.config.emailCodes.registerMaxAttempts;
    for (let attempt = 0; attempt < max; attempt += 1) {
      const response = await client.request('POST', '/auth/register', {
        body: { email, code: wrong, password: newPassword() },
      });
      expect(response.status).toBe(422);
    }
    const right = await client.request('POST', '/auth/register', {
      body: { email, code, password: newPassword() },
    });
    expect(right.status).toBe(422);
  });

  it('refuses an expired code', async () => {
    const client = createClient(context);
    const email = uniqueEmail('expired');
    await client.request('POST', '/auth/register/code', { body: { email } });
    const code = await latestRegisterCode(context, email);
    context.clock.advance(context.deps.config.emailCodes.registerTtlMs + 1000);
    const response = await client.request('POST', '/auth/register', {
      body: { email, code, password: newPassword() },
    });
    expect(response.status).toBe(422);
  });

  it('answers alike for a registered email, and sends its owner a notice instead of a code', async () => {
    const client = createClient(context);
    const email = uniqueEmail('taken');
    await client.signUp(email, newPassword());
    const fresh = await client.request('POST', '/auth/register/code', {
      body: { email: uniqueEmail('fresh') },
    });
    const taken = await client.request('POST', '/auth/register/code', { body: { email } });
    expect(taken.status).toBe(fresh.status);
    expect(taken.body).toEqual(fresh.body);
    expect(await latestEmailText(context, email, 'register_existing')).toMatch(/already has one/);
  });
});

describe('login and logout', () => {
  it('sets an HttpOnly SameSite=Lax session cookie and returns the CSRF token', async () => {
    const client = createClient(context);
    const email = uniqueEmail('login');
    const password = newPassword();
    await client.signUp(email, password);
    const response = await client.logIn(email, password);
    sessionTokens.push(client.sessionToken);
    csrfTokens.push(client.csrfToken);
    expect(response.status).toBe(200);
    const cookies = response.headers.getSetCookie();
    const session = cookies.find((line) => line.startsWith('tollgate_session='));
    expect(session).toMatch(/HttpOnly/);
    expect(session).toMatch(/SameSite=Lax/);
    expect(client.sessionToken).toMatch(/^[0-9a-f]{64}$/);
    expect(response.body.data.csrfToken).toBe(client.csrfToken);
    expect(response.body.data.account.email).toBe(email);

    const me = await client.request('GET', '/me');
    expect(me.status).toBe(200);
    expect(me.body.data.email).toBe(email);

    const stored = await context.deps.db
      .selectFrom('sessions')
      .select(['token_hash', 'ip', 'user_agent'])
      .where('id', '=', response.body.data.session.id)
      .executeTakeFirstOrThrow();
    expect(stored.token_hash.toString('hex')).not.toBe(client.sessionToken);
    expect(stored.ip).toBe(client.ip);
    expect(stored.user_agent).toBe('test-browser/1.0');
  });

  it('issues a new session token at every login', async () => {
    const client = createClient(context);
    const email = uniqueEmail('twice');
    const password = newPassword();
    await client.signUp(email, password);
    await client.logIn(email, password);
    const first = client.sessionToken;
    await client.logIn(email, password);
    sessionTokens.push(first, client.sessionToken);
    expect(client.sessionToken).not.toBe(first);
  });

  it('answers a wrong password and an unknown email alike', async () => {
    const client = createClient(context);
    const email = uniqueEmail('alike');
    await client.signUp(email, newPassword());
    const wrong = await client.logIn(email, 'wrong-password-123');
    const unknown = await client.logIn(uniqueEmail('nobody'), 'wrong-password-123');
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body).toEqual(unknown.body);
    expect(wrong.body.code).toBe('unauthenticated');
  });

  it('marks the cookies Secure with the __Host- prefix behind TLS', async () => {
    const tls = await createTestContext('auth-tls', {
      TRUST_PROXY: 'true',
      PUBLIC_URL: 'https://tollgate.example',
    });
    try {
      const client = createClient(tls);
      const email = uniqueEmail('tls');
      const password = newPassword();
      await client.signUp(email, password);
      const response = await client.logIn(email, password);
      sessionTokens.push(client.sessionToken);
      const session = response.headers
        .getSetCookie()
        .find((line) => line.startsWith('__Host-tollgate_session='));
      expect(session).toMatch(/Secure/);
      expect(session).toMatch(/Path=\//);
      expect(session).not.toMatch(/Domain=/);
      expect((await client.request('GET', '/me')).status).toBe(200);
    } finally {
      await tls.close();
    }
  });

  it('logs out: the session is ended and its cookie no longer works', async () => {
    const client = createClient(context);
    const email = uniqueEmail('logout');
    const password = newPassword();
    await client.signUp(email, password);
    await client.logIn(email, password);
    const token = client.sessionToken;
    sessionTokens.push(token);
    const out = await client.request('POST', '/auth/logout');
    expect(out.status).toBe(200);
    const replay = await client.request('GET', '/me', { headers: { cookie: `tollgate_session=${token}` } });
    expect(replay.status).toBe(401);
    expect(replay.body.code).toBe('session_expired');
  });
});

describe('session checks', () => {
  it('answers unauthenticated without a session or with an unknown one', async () => {
    const client = createClient(context);
    expect((await client.request('GET', '/me')).body.code).toBe('unauthenticated');
    const forged = await client.request('GET', '/me', {
      headers: { cookie: `tollgate_session=${'ab'.repeat(32)}` },
    });
    expect(forged.status).toBe(401);
    expect(forged.body.code).toBe('unauthenticated');
  });

  it('refuses an inference key in any header, even with a valid session', async () => {
    const client = createClient(context);
    const email = uniqueEmail('sk');
    const password = newPassword();
    await client.signUp(email, password);
    await client.logIn(email, password);
    const key = 'sk-tg-0123456789abcdefghijABCDEFGHIJ0123456789abcdef';
    const variants: Array<Record<string, string>> = [
      { authorization: `Bearer ${key}` },
      { 'x-api-key': key },
      { 'x-anything': key },
    ];
    for (const headers of variants) {
      const response = await client.request('GET', '/me', { headers });
      expect(response.status).toBe(401);
      expect(response.body.code).toBe('unauthenticated');
    }
    expect(context.logLines.join('\n')).not.toContain(key);
  });

  it('requires the CSRF token on state-changing routes', async () => {
    const client = createClient(context);
    const email = uniqueEmail('csrf');
    const password = newPassword();
    await client.signUp(email, password);
    await client.logIn(email, password);
    const missing = await client.request('PATCH', '/me', { body: { displayName: 'X' }, csrf: false });
    expect(missing.status).toBe(403);
    expect(missing.body.code).toBe('forbidden');
    const wrong = await client.request('PATCH', '/me', {
      body: { displayName: 'X' },
      csrf: false,
      headers: { 'x-csrf-token': 'cd'.repeat(32) },
    });
    expect(wrong.status).toBe(403);
    const right = await client.request('PATCH', '/me', { body: { displayName: 'Grace' } });
    expect(right.status).toBe(200);
    expect(right.body.data.displayName).toBe('Grace');
  });

  it('refuses a form-encoded body on routes without a session (no cross-site form posts)', async () => {
    const response = await context.publicApp.request('/api/v1/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'email=a%40b.c&password=12345678',
    });
    expect(response.status).toBe(422);
    expect(((await response.json()) as { code: string }).code).toBe('validation_failed');
  });

  it('ends a session after the idle timeout and after the absolute timeout', async () => {
    const client = createClient(context);
    const email = uniqueEmail('idle');
    const password = newPassword();
    await client.signUp(email, password);
    await client.logIn(email, password);
    context.clock.advance(context.deps.config.sessions.idleTimeoutMs + 1000);
    const idle = await client.request('GET', '/me');
    expect(idle.status).toBe(401);
    expect(idle.body.code).toBe('session_expired');

    await client.logIn(email, password);
    const step = context.deps.config.sessions.idleTimeoutMs / 2;
    for (let elapsed = 0; elapsed < context.deps.config.sessions.absoluteTimeoutMs; elapsed += step) {
      context.clock.advance(step);
      await client.request('GET', '/me');
    }
    const absolute = await client.request('GET', '/me');
    expect(absolute.body.code).toBe('session_expired');
  });
});
