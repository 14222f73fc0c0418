import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, expectNowhere, randomIp, uniqueEmail } from '../../../test/client.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';

let context: TestContext;
const passwords: string[] = [];

const LIMITS = {
  LOGIN_ACCOUNT_ADDRESS_LIMIT: '3',
  LOGIN_ADDRESS_LIMIT: '10',
  LOGIN_ACCOUNT_LIMIT: '6',
  CODE_CHECK_ADDRESS_LIMIT: '4',
  EMAIL_SEND_RECIPIENT_LIMIT: '2',
};

beforeAll(async () => {
  context = await createTestContext('throttles', { TRUST_PROXY: 'true', ...LIMITS });
});
afterAll(async () => {
  await context.publicApp.mailer.drain();
  expectNowhere(context, passwords);
  await context.close();
});

async function account(label: string) {
  const email = uniqueEmail(label);
  const password = `pw-${Math.random().toString(36).slice(2)}-battery`;
  passwords.push(password);
  await createClient(context).signUp(email, password);
  return { email, password };
}

function passWindow() {
  context.clock.advance(context.deps.config.throttles.loginPerAccount.windowMs + 1000);
}

describe('login throttles', () => {
  it('per account and address: trips, leaves the owner elsewhere alone, resets after the window', async () => {
    const { email, password } = await account('pair');
    const attacker = createClient(context);
    for (let attempt = 0; attempt < 3; attempt += 1) {
      expect((await attacker.logIn(email, 'wrong-guess-123')).status).toBe(401);
    }
    const tripped = await attacker.logIn(email, password);
    expect(tripped.status).toBe(429);
    expect(tripped.body.code).toBe('rate_limit_exceeded');
    expect(Number(tripped.headers.get('retry-after'))).toBeGreaterThan(0);

    expect((await createClient(context).logIn(email, password)).status).toBe(200);

    passWindow();
    expect((await attacker.logIn(email, password)).status).toBe(200);
  });

  it('a successful login clears the failures counted for that account and address', async () => {
    const { email, password } = await account('clear');
    const owner = createClient(context);
    for (let round = 0; round < 2; round += 1) {
      expect((await owner.logIn(email, 'typo-password-1')).status).toBe(401);
      expect((await owner.logIn(email, 'typo-password-2')).status).toBe(401);
      expect((await owner.logIn(email, password)).status).toBe(200);
    }
  });

  it('per address: one address cannot try many accounts', async () => {
    const { email, password } = await account('spray');
    const sprayer = createClient(context);
    for (let attempt = 0; attempt < 10; attempt += 1) {
      expect((await sprayer.logIn(uniqueEmail('target'), 'guess-password')).status).toBe(401);
    }
    expect((await sprayer.logIn(email, password)).status).toBe(429);
    expect((await createClient(context).logIn(email, password)).status).toBe(200);
  });

  it('per account from many addresses: slows strangers, never the owner at a known address', async () => {
    const { email, password } = await account('botnet');
    const owner = createClient(context);
    expect((await owner.logIn(email, password)).status).toBe(200);
    for (let attempt = 0; attempt < 6; attempt += 1) {
      expect((await createClient(context).logIn(email, 'botnet-guess')).status).toBe(401);
    }
    const fromNewAddress = await createClient(context).logIn(email, password);
    expect(fromNewAddress.status).toBe(429);
    expect((await owner.logIn(email, password)).status).toBe(200);
    passWindow();
    expect((await createClient(context).logIn(email, password)).status).toBe(200);
  });

  it('answers an unknown email exactly like a known one under the account throttle', async () => {
    const { email } = await account('known');
    const unknown = uniqueEmail('ghost');
    for (const target of [email, unknown]) {
      for (let attempt = 0; attempt < 6; attempt += 1) {
        expect((await createClient(context).logIn(target, 'guess-password')).status).toBe(401);
      }
    }
    const known = await createClient(context).logIn(email, 'guess-password');
    const ghost = await createClient(context).logIn(unknown, 'guess-password');
    expect(known.status).toBe(429);
    expect(ghost.status).toBe(429);
    expect(ghost.body).toEqual(known.body);
  });
});

describe('sign-up throttles', () => {
  it('limits code guesses per address, then lets the address try again after the window', async () => {
    const guesser = createClient(context, { ip: randomIp() });
    const email = uniqueEmail('guesser');
    await guesser.request('POST', '/auth/register/code', { body: { email } });
    const body = { email, code: '123456', password: 'long-enough-password' };
    for (let attempt = 0; attempt < 4; attempt += 1) {
      expect((await guesser.request('POST', '/auth/register', { body })).status).toBe(422);
    }
    const tripped = await guesser.request('POST', '/auth/register', { body });
    expect(tripped.status).toBe(429);
    context.clock.advance(context.deps.config.throttles.codeCheckPerAddress.windowMs + 1000);
    expect((await guesser.request('POST', '/auth/register', { body })).status).toBe(422);
  });

  it('limits emails sent to one recipient', async () => {
    const email = uniqueEmail('inbox');
    for (let attempt = 0; attempt < 2; attempt += 1) {
      expect(
        (await createClient(context).request('POST', '/auth/register/code', { body: { email } })).status,
      ).toBe(202);
    }
    const tripped = await createClient(context).request('POST', '/auth/register/code', { body: { email } });
    expect(tripped.status).toBe(429);
    const sent = await context.deps.db
      .selectFrom('outbox_emails')
      .select('id')
      .where('recipient', '=', email)
      .execute();
    expect(sent).toHaveLength(2);
  });

  it('keeps no email or address in the throttle table', async () => {
    const rows = await context.deps.db.selectFrom('throttle_buckets').select('key').execute();
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row.key).not.toMatch(/@|10\.\d+\.\d+\.\d+/);
  });
});
