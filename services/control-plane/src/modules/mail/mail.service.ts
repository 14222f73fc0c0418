import type { Logger } from '@tollgate/service-kit';
import type { Kysely } from 'kysely';
import type { Clock } from '../../clock.ts';
import type { Database } from '../../db/schema.ts';
import { insertOutboxEmail, markEmailFailed, markEmailSent } from './mail.repository.ts';
import type { MailSender, OutgoingEmail } from './mail-sender.ts';

/** Sends account emails: every message is kept in the outbox, then handed to the sender. */
export interface Mailer {
  /**
   * Stores the message and starts delivery without waiting for it, so how long an SMTP server
   * takes never tells a caller whether an address has an account.
   */
  send(email: OutgoingEmail): Promise<void>;
  /** Waits for deliveries in progress (shutdown and tests). */
  drain(): Promise<void>;
}

export function createMailer(options: {
  db: Kysely<Database>;
  sender: MailSender;
  clock: Clock;
  logger: Logger;
}): Mailer {
  const { db, sender, clock, logger } = options;
  const inFlight = new Set<Promise<void>>();

  async function deliver(id: string, email: OutgoingEmail): Promise<void> {
    try {
      await sender.send(email);
      // A delivered body would only leave live codes in a database dump. The log channel is for
      // development and tests, which read the code back from the outbox.
      await markEmailSent(db, id, clock.now(), { dropBody: sender.channel === 'smtp' });
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      logger.warn({ emailId: id, kind: email.kind, reason }, 'email delivery failed');
      await markEmailFailed(db, id, reason.slice(0, 500)).catch(() => undefined);
    }
  }

  return {
    async send(email) {
      const id = await insertOutboxEmail(db, {
        recipient: email.to,
        subject: email.subject,
        bodyText: email.text,
        kind: email.kind,
      });
      const delivery = deliver(id, email).finally(() => inFlight.delete(delivery));
      inFlight.add(delivery);
    },
    async drain() {
      await Promise.all([...inFlight]);
    },
  };
}
