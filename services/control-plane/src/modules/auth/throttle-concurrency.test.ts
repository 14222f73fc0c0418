import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, randomIp, uniqueEmail } from '../../../test/client.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';

// Throttles must hold when the attempts arrive at once, not only one after another: each slot is
// taken atomically before the guarded check runs.
let context: TestContext;

const LIMITS = {
  LOGIN_ACCOUNT_ADDRESS_LIMIT: '5',
  LOGIN_ADDRESS_LIMIT: '1000',
  LOGIN_ACCOUNT_LIMIT: '8',
  CODE_CHECK_ADDRESS_LIMIT: '4',
  KEY_REVEAL_LIMIT: '3',
  EMAIL_SEND_RECIPIENT_LIMIT: '2',
  EMAIL_SEND_ADDRESS_LIMIT: '1000',
};

beforeAll(async () => {
  context = await createTestContext('throttle-concurrency', { TRUST_PROXY: 'true', ...LIMITS });
}, 60_000);
afterAll(async () => {
  await context.publicApp.mailer.drain();
  await context.close();
});

function statusCounts(statuses: number[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

async function account(label: string) {
  const email = uniqueEmail(label);
  const password = `pw-${Math.random().toString(36).slice(2)}-battery`;
  await createClient(context).signUp(email, password);
  return { email, password };
}

describe('throttles under concurrency', () => {
  it('30 wrong passwords at once from one address: 5 are checked, 25 get 429 with Retry-After', async () => {
    const { email, password } = await account('burst');
    const attacker = createClient(context);
    const answers = await Promise.all(
      Array.from({ length: 30 }, () => attacker.logIn(email, 'wrong-guess-password')),
    );
    expect(statusCounts(answers.map((answer) => answer.status))).toEqual({ 401: 5, 429: 25 });
    for (const answer of answers.filter((each) => each.status === 429)) {
      expect(answer.body.code).toBe('rate_limit_exceeded');
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    // Even the right password is refused from that address now; the owner elsewhere is not.
    expect((await attacker.logIn(email, password)).status).toBe(429);
    expect((await createClient(context).logIn(email, password)).status).toBe(200);
  }, 60_000);

  it('30 wrong passwords at once from six addresses: the per-account limit (8) still holds', async () => {
    const { email } = await account('spread');
    const clients = Array.from({ length: 6 }, () => createClient(context, { ip: randomIp() }));
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, index) => clients[index % 6]?.logIn(email, 'wrong-guess-password')),
    );
    expect(statusCounts(answers.map((answer) => answer?.status ?? 0))).toEqual({ 401: 8, 429: 22 });
  }, 60_000);

  it('a successful login gives its per-account slot back', async () => {
    const { email, password } = await account('owner');
    for (let attempt = 0; attempt < 12; attempt += 1) {
      expect((await createClient(context).logIn(email, password)).status).toBe(200);
    }
  }, 60_000);

  it('20 wrong current passwords at once on a password change: 5 are checked', async () => {
    const { email, password } = await account('change');
    const owner = createClient(context);
    expect((await owner.logIn(email, password)).status).toBe(200);
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        owner.request('POST', '/me/password', {
          body: { currentPassword: 'not-the-password', newPassword: 'a-new-long-password' },
        }),
      ),
    );
    expect(statusCounts(answers.map((answer) => answer.status))).toEqual({ 422: 5, 429: 15 });
  }, 60_000);

  it('20 sign-up code guesses at once from one address: 4 are checked', async () => {
    const guesser = createClient(context, { ip: randomIp() });
    const email = uniqueEmail('guesses');
    await guesser.request('POST', '/auth/register/code', { body: { email } });
    const body = { email, code: '000000', password: 'long-enough-password' };
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => guesser.request('POST', '/auth/register', { body })),
    );
    expect(statusCounts(answers.map((answer) => answer.status))).toEqual({ 422: 4, 429: 16 });
  }, 60_000);

  it('20 key reveals at once: 3 secrets are handed out, every attempt is audited', async () => {
    const { email, password } = await account('reveal');
    const owner = createClient(context);
    expect((await owner.logIn(email, password)).status).toBe(200);
    const created = await owner.request('POST', '/me/api-keys', { body: { name: 'copy me' } });
    expect(created.status).toBe(201);
    const keyId = created.body.data.key.id as string;
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => owner.request('POST', `/me/api-keys/${keyId}/reveal`)),
    );
    expect(statusCounts(answers.map((answer) => answer.status))).toEqual({ 200: 3, 429: 17 });
    const audited = await context.deps.db
      .selectFrom('audit_log')
      .select('id')
      .where('action', '=', 'api_key.reveal')
      .where('target_id', '=', keyId)
      .execute();
    expect(audited).toHaveLength(20);
  }, 60_000);

  it('20 sign-up code requests at once for one recipient: 2 emails are sent', async () => {
    const email = uniqueEmail('flood');
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        createClient(context).request('POST', '/auth/register/code', { body: { email } }),
      ),
    );
    expect(statusCounts(answers.map((answer) => answer.status))).toEqual({ 202: 2, 429: 18 });
    await context.publicApp.mailer.drain();
    const sent = await context.deps.db
      .selectFrom('outbox_emails')
      .select('id')
      .where('recipient', '=', email)
      .execute();
    expect(sent).toHaveLength(2);
  }, 60_000);
});
