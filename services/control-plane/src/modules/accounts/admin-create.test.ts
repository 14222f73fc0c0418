import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../../test/client.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { type Member, member } from '../../../test/resellers.ts';

let context: TestContext;
let admin: Member;

beforeAll(async () => {
  context = await createTestContext('admin-create');
  admin = await member(context, 'opener', { admin: true });
});
afterAll(async () => {
  await context.publicApp.mailer.drain();
  await context.close();
});

describe('an admin opens an account for someone', () => {
  it('creates it, emails a link to choose a password that works, audits it, and refuses a taken address', async () => {
    const email = `opened-${randomBytes(4).toString('hex')}@example.test`;
    const created = await admin.request('POST', '/admin/accounts', {
      body: { email, displayName: 'Opened' },
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({
      email,
      displayName: 'Opened',
      status: 'active',
      isAdmin: false,
    });

    await context.publicApp.mailer.drain();
    const { body_text: text } = await context.deps.db
      .selectFrom('outbox_emails')
      .select('body_text')
      .where('recipient', '=', email)
      .where('kind', '=', 'account_created')
      .executeTakeFirstOrThrow();
    const token = /#token=([0-9a-f]{64})/.exec(text)?.[1];
    expect(token).toBeDefined();
    // The link's token sets the password, and the owner logs in with it.
    const owner = createClient(context);
    const reset = await owner.request('POST', '/auth/reset-password', {
      body: { token, password: 'a long enough password' },
    });
    expect(reset.status).toBe(200);
    expect((await owner.logIn(email, 'a long enough password')).status).toBe(200);

    const audited = await context.deps.db
      .selectFrom('audit_log')
      .select(['action', 'actor_account_id'])
      .where('target_id', '=', created.body.data.id)
      .execute();
    expect(audited).toEqual([{ action: 'admin.account.create', actor_account_id: admin.id }]);

    const again = await admin.request('POST', '/admin/accounts', { body: { email: email.toUpperCase() } });
    expect(again).toMatchObject({ status: 422, body: { errors: { email: [expect.any(String)] } } });
  });
});
