import { z } from '@hono/zod-openapi';
import { AccountView, DisplayName } from '../accounts/accounts.schemas.ts';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from './passwords.ts';
import type { SessionInfo } from './sessions.service.ts';

export const Email = z.email('Enter a valid email address.').max(254, 'Use at most 254 characters.');

export const NewPassword = z
  .string({ error: 'Enter a password.' })
  .min(PASSWORD_MIN_LENGTH, `Use at least ${PASSWORD_MIN_LENGTH} characters.`)
  .max(PASSWORD_MAX_LENGTH, `Use at most ${PASSWORD_MAX_LENGTH} characters.`);

/** Any stored password is accepted here (old rules may have differed); only absurd sizes are cut. */
const PresentedPassword = z
  .string({ error: 'Enter your password.' })
  .min(1, 'Enter your password.')
  .max(PASSWORD_MAX_LENGTH);

export const RegisterCodeRequest = z.object({ email: Email }).openapi('RegisterCodeRequest');
export const RegisterCodeSent = z
  .object({ sent: z.literal(true), expiresInSeconds: z.number().int() })
  .openapi('RegisterCodeSent');

export const RegisterRequest = z
  .object({
    email: Email,
    code: z.string().regex(/^\d{6}$/, 'Enter the 6-digit code from the email.'),
    password: NewPassword,
    displayName: DisplayName.optional(),
  })
  .openapi('RegisterRequest');

const TwoFactorCode = z
  .string()
  .max(64)
  .describe('A 6-digit code of the authenticator app, or one of the recovery codes (each works once).');

export const LoginRequest = z
  .object({
    email: Email,
    password: PresentedPassword,
    twoFactorCode: TwoFactorCode.optional().describe(
      'Needed when the account has two-factor sign-in on: without it (or with a wrong one) the answer is validation_failed on this field.',
    ),
  })
  .openapi('LoginRequest');

export const SessionView = z
  .object({
    id: z.string().uuid(),
    createdAt: z.string().datetime(),
    lastSeenAt: z.string().datetime(),
    expiresAt: z.string().datetime(),
    userAgent: z.string().nullable(),
    ip: z.string().nullable(),
    current: z.boolean(),
  })
  .openapi('Session');

export const LoginResult = z
  .object({
    account: AccountView,
    session: SessionView,
    csrfToken: z.string().openapi({ description: 'Send back as X-CSRF-Token on state-changing requests.' }),
  })
  .openapi('LoginResult');

export const ForgotPasswordRequest = z.object({ email: Email }).openapi('ForgotPasswordRequest');
export const ResetPasswordRequest = z
  .object({ token: z.string().min(1, 'Enter the reset token.').max(200), password: NewPassword })
  .openapi('ResetPasswordRequest');

export const ChangePasswordRequest = z
  .object({ currentPassword: PresentedPassword, newPassword: NewPassword })
  .openapi('ChangePasswordRequest');

export const Done = z.object({ ok: z.literal(true) }).openapi('Done');

export const TwoFactorStatus = z
  .object({
    enabled: z.boolean(),
    enabledAt: z.string().datetime().nullable(),
    recoveryCodesLeft: z.number().int(),
  })
  .openapi('TwoFactorStatus');

export const TwoFactorEnrolRequest = z
  .object({ password: PresentedPassword })
  .openapi('TwoFactorEnrolRequest');

export const TwoFactorEnrolment = z
  .object({
    secret: z.string().describe('The shared secret in base32, for typing into the app. Returned only here.'),
    otpauthUri: z.string().describe('otpauth://totp/... for the app; the QR code encodes it.'),
    qrCode: z.string().describe('The QR code of otpauthUri, as a data: URL of an SVG image.'),
  })
  .openapi('TwoFactorEnrolment');

export const TwoFactorConfirmRequest = z
  .object({ code: z.string().regex(/^\s*\d{6}\s*$/, 'Enter the 6-digit code from your authenticator app.') })
  .openapi('TwoFactorConfirmRequest');

export const TwoFactorRecoveryCodes = z
  .object({ recoveryCodes: z.array(z.string()).describe('Single-use codes, shown once: keep them safe.') })
  .openapi('TwoFactorRecoveryCodes');

export const TwoFactorDisableRequest = z
  .object({ password: PresentedPassword, code: TwoFactorCode.min(1, 'Enter a code or a recovery code.') })
  .openapi('TwoFactorDisableRequest');

export function toSessionView(session: SessionInfo, currentId: string): z.infer<typeof SessionView> {
  return {
    id: session.id,
    createdAt: session.createdAt.toISOString(),
    lastSeenAt: session.lastSeenAt.toISOString(),
    expiresAt: session.expiresAt.toISOString(),
    userAgent: session.userAgent,
    ip: session.ip,
    current: session.id === currentId,
  };
}
