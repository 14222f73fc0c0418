/**
 * Records the work a service does, to compare two runs without timing them: every statement sent
 * to the database (its kind and the tables it names, not its parameters) and every email handed
 * to the mailer (whether it went to the address asked about).
 */
import type { Kysely, KyselyPlugin } from 'kysely';
import type { Database } from '../src/db/schema.ts';
import type { Mailer } from '../src/modules/mail/mail.service.ts';

function tablesOf(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) tablesOf(item, found);
  else if (node && typeof node === 'object') {
    const record = node as { kind?: string; table?: { identifier?: { name?: string } } };
    if (record.kind === 'TableNode' && record.table?.identifier?.name)
      found.push(record.table.identifier.name);
    for (const value of Object.values(node)) tablesOf(value, found);
  }
  return found;
}

export function recordWork(db: Kysely<Database>, address: string) {
  const statements: string[] = [];
  const mails: string[] = [];
  const recorder: KyselyPlugin = {
    transformQuery({ node }) {
      const statement = `${node.kind} ${JSON.stringify(tablesOf(node))}`;
      // The throttle prunes old buckets on one hit in N at random, whatever the address: not work
      // the address caused, and recording it made two equal runs differ one time in N.
      if (statement !== 'DeleteQueryNode ["throttle_buckets"]') statements.push(statement);
      return node;
    },
    async transformResult({ result }) {
      return result;
    },
  };
  const mailer: Mailer = {
    async send(mail) {
      mails.push(mail.to === address ? 'to the address' : 'elsewhere');
    },
    async drain() {},
  };
  return { db: db.withPlugin(recorder), mailer, work: { statements, mails } };
}
