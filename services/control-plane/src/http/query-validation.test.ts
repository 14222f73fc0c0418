/**
 * Query strings and path parameters that fail validation: 422 validation_failed, worded for the
 * part of the request that failed (never "the request body"), never a 500. The usage summary
 * without a range covers the last 30 days.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type TestClient, uniqueEmail } from '../../test/client.ts';
import { createTestContext, type TestContext } from '../../test/context.ts';
import { findAccountByEmail, setAccountRoles } from '../modules/accounts/accounts.service.ts';
import { summaryRange } from '../modules/billing/billing.schemas.ts';

let context: TestContext;
let client: TestClient;

beforeAll(async () => {
  context = await createTestContext('query-validation');
  client = createClient(context);
  const email = uniqueEmail('query');
  await client.signUp(email, 'a long enough password');
  expect((await client.logIn(email, 'a long enough password')).status).toBe(200);
});
afterAll(async () => {
  await context.publicApp.mailer.drain();
  await context.close();
});

describe('query and path validation', () => {
  it('answers the usage summary without from/to for the last 30 days', async () => {
    const summary = await client.request('GET', '/me/usage/summary');
    expect(summary).toMatchObject({ status: 200, body: { data: [] } });
    expect(summaryRange({}, new Date('2026-03-10T15:00:00Z'))).toEqual({
      from: '2026-02-09',
      to: '2026-03-10',
    });
    expect(summaryRange({ to: '2026-01-30' })).toEqual({ from: '2026-01-01', to: '2026-01-30' });
    expect(summaryRange({ from: '2026-01-05', to: '2026-01-06' })).toEqual({
      from: '2026-01-05',
      to: '2026-01-06',
    });
  });

  it('refuses impossible and malformed dates as a query problem', async () => {
    for (const query of ['from=2026-02-31&to=2026-03-01', 'from=2026-13-01', 'to=yesterday', 'from=']) {
      const answer = await client.request('GET', `/me/usage/summary?${query}`);
      expect(answer.status, query).toBe(422);
      expect(answer.body).toMatchObject({
        code: 'validation_failed',
        message: 'The query parameters failed validation.',
      });
      expect(Object.keys(answer.body.errors).every((field) => ['from', 'to'].includes(field))).toBe(true);
    }
    const limit = await client.request('GET', '/me/activity?limit=0');
    expect(limit).toMatchObject({
      status: 422,
      body: { code: 'validation_failed', message: 'The query parameters failed validation.' },
    });
    expect(limit.body.errors.limit).toBeDefined();
  });

  it('words a bad path parameter as such', async () => {
    const admin = createClient(context);
    const email = uniqueEmail('query-admin');
    await admin.signUp(email, 'a long enough password');
    const account = await findAccountByEmail(context.deps.db, email);
    await setAccountRoles(context.deps.db, account!.id, { admin: true });
    expect((await admin.logIn(email, 'a long enough password')).status).toBe(200);
    const answer = await admin.request('POST', '/admin/reservations/not-a-uuid/resolve', {
      body: { action: 'release', note: 'stuck call' },
    });
    expect(answer.status).toBe(422);
    expect(answer.body).toMatchObject({
      code: 'validation_failed',
      message: 'The path parameters failed validation.',
    });
  });

  it('keeps the body wording for bodies', async () => {
    const answer = await client.request('POST', '/me/api-keys', { body: { name: 42 } });
    expect(answer).toMatchObject({
      status: 422,
      body: { code: 'validation_failed', message: 'The request body failed validation.' },
    });
  });
});
