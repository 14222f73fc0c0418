import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, expectNowhere, type TestClient, uniqueEmail } from '../../../test/client.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { parseArguments } from '../../cli/arguments.ts';
import { COMMANDS } from '../../cli/commands.ts';

let context: TestContext;
const password = 'two-factor-password-long';

beforeAll(async () => {
  context = await createTestContext('two-factor', { TRUST_PROXY: 'true' });
});
afterAll(async () => {
  await context.publicApp.mailer.drain();
  await context.close();
});

/** The app's code for `secret` now (by the test clock), as a phone would show it. */
function codeOf(secret: string): string {
  return TOTP.generate({ secret: Secret.fromBase32(secret), timestamp: context.clock.now().getTime() });
}

/** Moves to the next 30-second step, so the app shows a new code. */
function nextStep() {
  context.clock.advance(30_000);
}

async function auditActions(accountId: string): Promise<string[]> {
  const rows = await context.deps.db
    .selectFrom('audit_log')
    .select('action')
    .where('target_id', '=', accountId)
    .where('action', 'like', 'account.two_factor.%')
    .orderBy('id')
    .execute();
  return rows.map((row) => row.action);
}

/** A signed-in account with two-factor sign-in on: its secret and recovery codes. */
async function enrolled(label: string) {
  const email = uniqueEmail(label);
  const client = createClient(context);
  const { id } = await client.signUp(email, password);
  await client.logIn(email, password);
  const enrolment = await client.request('POST', '/me/two-factor/enrol', { body: { password } });
  const secret: string = enrolment.body.data.secret;
  const confirmed = await client.request('POST', '/me/two-factor/confirm', {
    body: { code: codeOf(secret) },
  });
  expect(confirmed.status).toBe(200);
  nextStep();
  return { email, id, client, secret, recoveryCodes: confirmed.body.data.recoveryCodes as string[] };
}

async function logIn(client: TestClient, email: string, twoFactorCode?: string) {
  return client.request('POST', '/auth/login', { body: { email, password, twoFactorCode } });
}

describe('two-factor sign-in', () => {
  it('enrols with the password, a QR code and the secret once, and turns on only with a right code', async () => {
    const email = uniqueEmail('enrol');
    const client = createClient(context);
    const { id } = await client.signUp(email, password);
    await client.logIn(email, password);

    const wrongPassword = await client.request('POST', '/me/two-factor/enrol', {
      body: { password: 'nope' },
    });
    expect(wrongPassword.status).toBe(422);
    expect(wrongPassword.body.errors.password).toEqual(['The password is incorrect.']);

    const enrolment = await client.request('POST', '/me/two-factor/enrol', { body: { password } });
    expect(enrolment.status).toBe(200);
    const { secret, otpauthUri, qrCode } = enrolment.body.data;
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(otpauthUri).toBe(
      `otpauth://totp/Tollgate:${encodeURIComponent(email)}?issuer=Tollgate&secret=${secret}&algorithm=SHA1&digits=6&period=30`,
    );
    expect(qrCode).toMatch(/^data:image\/svg\+xml;base64,/);
    expect(Buffer.from(qrCode.split(',')[1], 'base64').toString()).toContain('<svg');

    // Stored encrypted: the row does not hold the secret, and nothing returns it again.
    const row = await context.deps.db
      .selectFrom('two_factor_secrets')
      .selectAll()
      .where('account_id', '=', id)
      .executeTakeFirstOrThrow();
    expect(row.secret_ciphertext.toString('latin1')).not.toContain(secret);
    const status = await client.request('GET', '/me/two-factor');
    expect(status.body.data).toEqual({ enabled: false, enabledAt: null, recoveryCodesLeft: 0 });
    expect(JSON.stringify(status.body)).not.toContain(secret);

    const wrong = await client.request('POST', '/me/two-factor/confirm', {
      body: { code: codeOf(secret) === '000000' ? '111111' : '000000' },
    });
    expect(wrong.status).toBe(422);
    expect(wrong.body.errors.code).toEqual(['This code is not right, or was already used.']);
    expect((await client.request('GET', '/me/two-factor')).body.data.enabled).toBe(false);

    const confirmed = await client.request('POST', '/me/two-factor/confirm', {
      body: { code: codeOf(secret) },
    });
    expect(confirmed.status).toBe(200);
    expect(confirmed.body.data.recoveryCodes).toHaveLength(10);
    const on = await client.request('GET', '/me/two-factor');
    expect(on.body.data).toMatchObject({ enabled: true, recoveryCodesLeft: 10 });
    expect(JSON.stringify(on.body)).not.toContain(secret);
    // A second set-up would replace the secret of an account that has it on: refused.
    const again = await client.request('POST', '/me/two-factor/enrol', { body: { password } });
    expect(again.status).toBe(403);
    expect(await auditActions(id)).toEqual(['account.two_factor.enable']);
    // Never in a log line.
    expectNowhere(context, [secret, ...confirmed.body.data.recoveryCodes], []);
  });

  it('asks for the code at sign-in, takes each code once, and a recovery code once', async () => {
    const { email, id, secret, recoveryCodes } = await enrolled('sign-in');
    const browser = createClient(context);

    const without = await logIn(browser, email);
    expect(without.status).toBe(422);
    expect(without.body.errors.twoFactorCode).toEqual([
      'Enter the 6-digit code from your authenticator app, or a recovery code.',
    ]);
    expect(browser.sessionToken).toBeNull();

    const code = codeOf(secret);
    const wrong = await logIn(browser, email, code === '123456' ? '654321' : '123456');
    expect(wrong.status).toBe(422);
    expect(browser.sessionToken).toBeNull();

    const right = await logIn(browser, email, code);
    expect(right.status).toBe(200);
    expect((await browser.request('GET', '/me')).status).toBe(200);

    // The same code again, from another browser within its 30 s: refused (a code is good once).
    const replay = await logIn(createClient(context), email, code);
    expect(replay.status).toBe(422);

    const [recovery, other] = recoveryCodes;
    const byRecovery = await logIn(createClient(context), email, recovery?.toUpperCase());
    expect(byRecovery.status).toBe(200);
    const reused = await logIn(createClient(context), email, recovery);
    expect(reused.status).toBe(422);
    expect((await logIn(createClient(context), email, other)).status).toBe(200);
    expect((await browser.request('GET', '/me/two-factor')).body.data.recoveryCodesLeft).toBe(8);
    expect(await auditActions(id)).toEqual([
      'account.two_factor.enable',
      'account.two_factor.recovery_code_used',
      'account.two_factor.recovery_code_used',
    ]);
  });

  it('limits wrong codes per account: past the limit even the right code waits', async () => {
    const { email, secret } = await enrolled('throttle');
    const right = codeOf(secret);
    const wrongCode = right === '000000' ? '111111' : '000000';
    // LOGIN_ACCOUNT_ADDRESS_LIMIT (5 by default) attempts per window, from any address.
    for (let attempt = 0; attempt < 5; attempt += 1) {
      expect((await logIn(createClient(context), email, wrongCode)).status).toBe(422);
    }
    const blocked = await logIn(createClient(context), email, right);
    expect(blocked.status).toBe(429);
    expect(blocked.body.code).toBe('rate_limit_exceeded');
  });

  it('turns off only with the password and a code, then signs in without one', async () => {
    const { email, id, client, secret } = await enrolled('disable');
    const noPassword = await client.request('POST', '/me/two-factor/disable', {
      body: { password: 'wrong-password', code: codeOf(secret) },
    });
    expect(noPassword.status).toBe(422);
    const noCode = await client.request('POST', '/me/two-factor/disable', {
      body: { password, code: '000001' },
    });
    expect(noCode.status).toBe(422);
    expect((await client.request('GET', '/me/two-factor')).body.data.enabled).toBe(true);

    const off = await client.request('POST', '/me/two-factor/disable', {
      body: { password, code: codeOf(secret) },
    });
    expect(off.status).toBe(200);
    expect((await client.request('GET', '/me/two-factor')).body.data).toEqual({
      enabled: false,
      enabledAt: null,
      recoveryCodesLeft: 0,
    });
    expect((await logIn(createClient(context), email)).status).toBe(200);
    expect(await auditActions(id)).toEqual(['account.two_factor.enable', 'account.two_factor.disable']);
  });

  it('is turned off by the operator for an owner who lost phone and recovery codes, with the reason audited', async () => {
    const { email, id } = await enrolled('lost-phone');
    const reset = COMMANDS['reset-two-factor']!;
    await expect(reset.run(context.deps, parseArguments([email]))).rejects.toThrow('needs --note');
    const done = await reset.run(
      context.deps,
      parseArguments([email, '--note', 'ticket 42, identity checked']),
    );
    expect(done).toEqual({ email, wasOn: true });
    expect((await logIn(createClient(context), email)).status).toBe(200);
    const row = await context.deps.db
      .selectFrom('audit_log')
      .select(['action', 'detail'])
      .where('target_id', '=', id)
      .where('action', '=', 'account.two_factor.reset')
      .executeTakeFirstOrThrow();
    expect(row.detail).toMatchObject({ reason: 'ticket 42, identity checked', wasOn: true });
  });
});
