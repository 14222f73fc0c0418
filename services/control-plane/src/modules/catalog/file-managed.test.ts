import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedCatalog, TEST_CATALOG } from '../../../test/billing.ts';
import { createTestContext, type TestContext } from '../../../test/context.ts';
import { type Member, member } from '../../../test/resellers.ts';

let context: TestContext;
let admin: Member;

beforeAll(async () => {
  const folder = await mkdtemp(path.join(tmpdir(), 'file-managed-'));
  const file = path.join(folder, 'catalog.yaml');
  await writeFile(file, TEST_CATALOG);
  context = await createTestContext('file-managed', { CATALOG_FILE: file });
  await seedCatalog(context);
  admin = await member(context, 'cataloguer', { admin: true });
});
afterAll(async () => {
  await context.publicApp.mailer.drain();
  await context.close();
});

const alias = {
  providerId: 'up-openai',
  upstreamModel: 'm',
  protocols: ['chat_completions'],
  published: false,
  price: null,
  defaultMaxOutputTokens: 10,
  maxOutputTokens: 10,
};

describe('entries of the catalogue file', () => {
  it('are listed as managed by the file, and their edits are refused saying where to change them', async () => {
    const catalog = await admin.request('GET', '/admin/catalog');
    expect(catalog.body.data.managedByFile).toMatchObject({
      file: expect.stringMatching(/catalog\.yaml$/),
      aliases: expect.arrayContaining(['priced', 'tokens-only', 'hidden']),
      providers: expect.arrayContaining(['up-openai']),
      packages: expect.arrayContaining(['small', 'exact']),
    });

    const refused = await admin.request('PUT', '/admin/catalog/aliases/priced', { body: alias });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('forbidden');
    expect(refused.body.message).toMatch(/alias priced is managed by the catalogue file \(CATALOG_FILE\)/);
    const provider = await admin.request('PUT', '/admin/catalog/providers/up-openai', {
      body: { kind: 'openai', baseUrl: 'https://example.test/v1', credentialRef: null },
    });
    expect(provider.status).toBe(403);
    // Nothing changed.
    const after = await admin.request('GET', '/admin/catalog');
    const priced = after.body.data.aliases.find((item: { alias: string }) => item.alias === 'priced');
    expect(priced.upstreamModel).not.toBe('m');

    // An entry only in the database is the admins' to edit.
    expect((await admin.request('PUT', '/admin/catalog/aliases/admins-own', { body: alias })).status).toBe(
      200,
    );
    const listed = await admin.request('GET', '/admin/catalog');
    expect(listed.body.data.managedByFile.aliases).not.toContain('admins-own');
  });

  it('leave the admin screens usable when the file has gone since the start', async () => {
    const { unlink } = await import('node:fs/promises');
    await unlink(context.deps.config.catalogFile as string);
    const catalog = await admin.request('GET', '/admin/catalog');
    expect(catalog.status).toBe(200);
    expect(catalog.body.data.managedByFile.aliases).toEqual([]);
  });
});
