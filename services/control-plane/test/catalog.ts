/** Fixtures of the catalogue tests: the test catalogue, a signed-in admin, the models as read. */
import { GatewayCatalog } from '@tollgate/schemas';
import { expect } from 'vitest';
import { findAccountByEmail, setAccountRoles } from '../src/modules/accounts/accounts.service.ts';
import { internalApi, seedCatalog } from './billing.ts';
import { createClient, type TestClient, uniqueEmail } from './client.ts';
import { createTestContext, type TestContext } from './context.ts';

const PASSWORD = 'a long enough password';

/** A database named `name` with the test catalogue, and a client signed in as an admin. */
export async function createCatalogFixture(
  name: string,
): Promise<{ context: TestContext; admin: TestClient }> {
  const context = await createTestContext(name);
  await seedCatalog(context);
  const admin = createClient(context);
  const email = uniqueEmail(`${name}-admin`);
  await admin.signUp(email, PASSWORD);
  const account = (await findAccountByEmail(context.deps.db, email))!;
  await setAccountRoles(context.deps.db, account.id, { admin: true });
  expect((await admin.logIn(email, PASSWORD)).status).toBe(200);
  return { context, admin };
}

/** Closes what createCatalogFixture opened, once the emails it sent are written. */
export async function closeCatalogFixture(context: TestContext): Promise<void> {
  await context.publicApp.mailer.drain();
  await context.close();
}

/** An alias as customers see it (GET /catalog/models). */
export async function publicModel(context: TestContext, alias: string) {
  const models = await createClient(context).request('GET', '/catalog/models');
  return models.body.data.find((model: { alias: string }) => model.alias === alias);
}

/** An alias as gateways read it (the internal catalogue). */
export async function gatewayAlias(context: TestContext, alias: string) {
  const catalog = await internalApi(context).call<unknown>('/catalog');
  return GatewayCatalog.parse(catalog.body).aliases.find((entry) => entry.alias === alias);
}
