import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createClient,
  expectNowhere,
  latestEmailText,
  type TestClient,
  uniqueEmail,
} from '../../../test/client.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { recordWork } from '../../../test/work-recorder.ts';
import { requestPasswordReset } from './password-reset.service.ts';

let context: TestContext;
const passwords: string[] = [];
const sessionTokens: Array<string | null> = [];

beforeAll(async () => {
  context = await createTestContext('password-sessions', { TRUST_PROXY: 'true' });
});
afterAll(async () => {
  await context.publicApp.mailer.drain();
  expectNowhere(context, [...passwords, ...sessionTokens]);
  await context.close();
});

function newPassword(): string {
  const password = `pw-${Math.random().toString(36).slice(2)}-staple`;
  passwords.push(password);
  return password;
}

/** One account, signed in from two browsers. */
async function twoBrowsers(label: string) {
  const email = uniqueEmail(label);
  const password = newPassword();
  const first = createClient(context, { userAgent: 'browser-one' });
  await first.signUp(email, password);
  await first.logIn(email, password);
  const second = createClient(context, { userAgent: 'browser-two' });
  await second.logIn(email, password);
  sessionTokens.push(first.sessionToken, second.sessionToken);
  return { email, password, first, second };
}

/**
 * The token of the emailed link: the email always carries a link to the dashboard (on PUBLIC_URL,
 * else where this control plane listens), never a bare token to paste.
 */
async function resetTokenFor(email: string): Promise<string> {
  const text = await latestEmailText(context, email, 'password_reset');
  const match = /^http:\/\/127\.0\.0\.1:\d+\/reset-password#token=([0-9a-f]{64})$/m.exec(text);
  if (!match?.[1]) throw new Error(`no link in email: ${text}`);
  expect(text).not.toMatch(/token is|token: /);
  return match[1];
}

async function expectSessionExpired(client: TestClient) {
  const response = await client.request('GET', '/me');
  expect(response.status).toBe(401);
  expect(response.body.code).toBe('session_expired');
}

describe('password reset', () => {
  it('sets a new password with a single-use token and ends every session', async () => {
    const { email, password, first, second } = await twoBrowsers('reset');
    const stranger = createClient(context);
    const asked = await stranger.request('POST', '/auth/forgot-password', { body: { email } });
    expect(asked.status).toBe(202);
    const token = await resetTokenFor(email);
    const fresh = newPassword();
    const done = await stranger.request('POST', '/auth/reset-password', { body: { token, password: fresh } });
    expect(done.status).toBe(200);

    await expectSessionExpired(first);
    await expectSessionExpired(second);
    expect((await stranger.logIn(email, password)).status).toBe(401);
    expect((await stranger.logIn(email, fresh)).status).toBe(200);

    const reused = await stranger.request('POST', '/auth/reset-password', {
      body: { token, password: newPassword() },
    });
    expect(reused.status).toBe(422);
    expect(reused.body.errors.token).toHaveLength(1);
  });

  it('answers alike for an unknown email, which gets a notice and no token', async () => {
    const client = createClient(context);
    const { email } = await twoBrowsers('known');
    const known = await client.request('POST', '/auth/forgot-password', { body: { email } });
    const unknownEmail = uniqueEmail('unknown');
    const unknown = await client.request('POST', '/auth/forgot-password', { body: { email: unknownEmail } });
    expect(unknown.status).toBe(known.status);
    expect(unknown.body).toEqual(known.body);
    await expect(latestEmailText(context, unknownEmail, 'password_reset')).rejects.toThrow();
    const notice = await latestEmailText(context, unknownEmail, 'password_reset_no_account');
    expect(notice).toMatch(/has no account/);
    expect(notice).not.toMatch(/[0-9a-f]{64}/);
  });

  it('does the same work for an address with an account as for one without', async () => {
    // The time an answer takes must not tell the two apart; rather than timing them (which
    // flakes), the work each does is recorded and must be the same.
    const { email } = await twoBrowsers('same-work');
    const work = async (address: string) => {
      const recorded = recordWork(context.deps.db, address);
      await requestPasswordReset(
        { ...context.deps, db: recorded.db },
        recorded.mailer,
        { email: address },
        '192.0.2.77',
      );
      return recorded.work;
    };
    const known = await work(email);
    const unknownEmail = uniqueEmail('same-work-unknown');
    const unknown = await work(unknownEmail);
    expect(known.mails).toEqual(['to the address']);
    expect(known.statements.some((statement) => statement.startsWith('InsertQueryNode'))).toBe(true);
    expect(unknown).toEqual(known);
    // The unknown address's token was stored expired: nothing can redeem it.
    const stored = await context.deps.db
      .selectFrom('email_codes')
      .select(['expires_at'])
      .where('purpose', '=', 'password_reset')
      .where('email', '=', unknownEmail)
      .execute();
    expect(stored).toHaveLength(1);
    expect(stored.every((row) => row.expires_at <= context.clock.now())).toBe(true);
  });

  it('refuses a token once the password was changed another way', async () => {
    const { email, password, first } = await twoBrowsers('changed-since');
    const stranger = createClient(context);
    await stranger.request('POST', '/auth/forgot-password', { body: { email } });
    const token = await resetTokenFor(email);
    const changedTo = newPassword();
    const changed = await first.request('POST', '/me/password', {
      body: { currentPassword: password, newPassword: changedTo },
    });
    expect(changed.status).toBe(200);

    const late = await stranger.request('POST', '/auth/reset-password', {
      body: { token, password: newPassword() },
    });
    expect(late.status).toBe(422);
    expect(late.body.code).toBe('validation_failed');
    expect(late.body.errors.token).toHaveLength(1);
    expect((await createClient(context).logIn(email, changedTo)).status).toBe(200);
    expect((await first.request('GET', '/me')).status).toBe(200);
  });

  it('refuses an expired token, and an older token once a newer one was sent', async () => {
    const { email } = await twoBrowsers('stale');
    const client = createClient(context);
    await client.request('POST', '/auth/forgot-password', { body: { email } });
    const older = await resetTokenFor(email);
    await client.request('POST', '/auth/forgot-password', { body: { email } });
    const newer = await resetTokenFor(email);
    expect(newer).not.toBe(older);
    const withOlder = await client.request('POST', '/auth/reset-password', {
      body: { token: older, password: newPassword() },
    });
    expect(withOlder.status).toBe(422);
    context.clock.advance(context.deps.config.emailCodes.resetTtlMs + 1000);
    const expired = await client.request('POST', '/auth/reset-password', {
      body: { token: newer, password: newPassword() },
    });
    expect(expired.status).toBe(422);
  });
});

describe('change password', () => {
  it('needs the current password and ends the other sessions only', async () => {
    const { email, password, first, second } = await twoBrowsers('change');
    const wrong = await first.request('POST', '/me/password', {
      body: { currentPassword: 'not-the-password', newPassword: newPassword() },
    });
    expect(wrong.status).toBe(422);
    expect(wrong.body.errors.currentPassword).toHaveLength(1);

    const fresh = newPassword();
    const changed = await first.request('POST', '/me/password', {
      body: { currentPassword: password, newPassword: fresh },
    });
    expect(changed.status).toBe(200);
    expect(changed.body.data.endedSessions).toBe(1);
    expect((await first.request('GET', '/me')).status).toBe(200);
    await expectSessionExpired(second);
    expect((await createClient(context).logIn(email, fresh)).status).toBe(200);
  });
});

describe('sessions', () => {
  it('lists open sessions with the current one marked', async () => {
    const { first } = await twoBrowsers('list');
    const response = await first.request('GET', '/me/sessions');
    expect(response.status).toBe(200);
    expect(response.body.data).toHaveLength(2);
    const current = response.body.data.find((session: { current: boolean }) => session.current);
    expect(current.userAgent).toBe('browser-one');
    expect(current.ip).toBe(first.ip);
    expect(JSON.stringify(response.body)).not.toContain(first.sessionToken);
  });

  it('ends a session from another browser: that browser gets session_expired', async () => {
    const { first, second } = await twoBrowsers('end');
    const list = await first.request('GET', '/me/sessions');
    const other = list.body.data.find((session: { current: boolean }) => !session.current);
    const ended = await first.request('DELETE', `/me/sessions/${other.id}`);
    expect(ended.status).toBe(200);
    await expectSessionExpired(second);
    expect((await first.request('GET', '/me')).status).toBe(200);
    expect((await first.request('GET', '/me/sessions')).body.data).toHaveLength(1);
    const again = await first.request('DELETE', `/me/sessions/${other.id}`);
    expect(again.status).toBe(404);
  });

  it("answers not_found for another account's session", async () => {
    const alice = await twoBrowsers('alice');
    const bob = await twoBrowsers('bob');
    const aliceSessions = await alice.first.request('GET', '/me/sessions');
    const target = aliceSessions.body.data[0].id;
    for (const id of [target, '00000000-0000-4000-8000-000000000000', 'nope']) {
      const response = await bob.first.request('DELETE', `/me/sessions/${id}`);
      expect(response.status).toBe(404);
      expect(response.body.code).toBe('not_found');
    }
    expect((await alice.first.request('GET', '/me')).status).toBe(200);
    expect((await alice.second.request('GET', '/me')).status).toBe(200);
  });
});
