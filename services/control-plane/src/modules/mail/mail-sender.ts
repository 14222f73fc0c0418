import type { Logger } from '@tollgate/service-kit';
import nodemailer from 'nodemailer';

export interface OutgoingEmail {
  to: string;
  subject: string;
  text: string;
  kind: string;
}

/** Hands one message to a delivery channel. */
export interface MailSender {
  readonly channel: 'smtp' | 'log';
  send(email: OutgoingEmail): Promise<void>;
}

export function createSmtpSender(smtpUrl: string, from: string): MailSender {
  const transport = nodemailer.createTransport(smtpUrl);
  return {
    channel: 'smtp',
    async send(email) {
      await transport.sendMail({ from, to: email.to, subject: email.subject, text: email.text });
    },
  };
}

/**
 * Development default when no SMTP server is configured: the message (code or link included) is
 * written to the log so a developer can read it. Never use it for a public deployment.
 */
export function createLogSender(logger: Logger): MailSender {
  return {
    channel: 'log',
    async send(email) {
      logger.info(
        { mail: { to: email.to, subject: email.subject, kind: email.kind, text: email.text } },
        'email',
      );
    },
  };
}

export function createMailSender(
  options: { smtpUrl?: string; mailFrom: string },
  logger: Logger,
): MailSender {
  return options.smtpUrl ? createSmtpSender(options.smtpUrl, options.mailFrom) : createLogSender(logger);
}
