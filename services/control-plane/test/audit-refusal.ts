import { sql } from 'kysely';
import type { TestContext } from './context.ts';

/**
 * Makes this test database refuse audit rows about chosen subjects (their target, or the customer
 * their detail names), as a full disk or a broken row would: what commits with its audit row must
 * then not commit at all.
 */
export async function auditRefusal(context: TestContext) {
  const db = context.deps.db;
  await sql`
    create table refused_audit_subjects (subject text primary key);
    create function refuse_listed_audit() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from refused_audit_subjects
                 where subject in (new.target_id, new.detail->>'customerId')) then
        raise exception 'audit row refused by the test';
      end if;
      return new;
    end $$;
    create trigger refuse_listed_audit before insert on audit_log
      for each row execute function refuse_listed_audit();
  `.execute(db);
  return {
    refuse: (subject: string) => sql`insert into refused_audit_subjects values (${subject})`.execute(db),
    allow: (subject: string) =>
      sql`delete from refused_audit_subjects where subject = ${subject}`.execute(db),
  };
}
