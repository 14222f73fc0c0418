import { z } from '@hono/zod-openapi';
import { MANAGEMENT_SCOPES } from '@tollgate/schemas';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '../auth/passwords.ts';
import { AmountsView, UsageSummaryRowView } from '../billing/billing.schemas.ts';
import type { ManagementKey } from '../management-keys/management-keys.service.ts';
import type { GrantRequest } from './grants.service.ts';
import type { Invitation, ResellerOfAccount } from './invitations.service.ts';

const PositiveIntegerString = z
  .string()
  .regex(/^[1-9][0-9]{0,17}$/, 'Use a positive whole number as a string, e.g. "1000".');

const Day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'Use a date YYYY-MM-DD.');

export const CustomerIdParam = z.object({ id: z.string().openapi({ param: { name: 'id', in: 'path' } }) });
export const CustomerKeyParams = z.object({
  id: z.string().openapi({ param: { name: 'id', in: 'path' } }),
  keyId: z.string().openapi({ param: { name: 'keyId', in: 'path' } }),
});

/** Only these fields are read: a role, a reseller link or a balance in the body is ignored. */
export const CreateCustomerRequest = z
  .object({
    email: z.string().trim().email('Enter a valid email address.').max(254),
    displayName: z
      .string()
      .trim()
      .min(1, 'Enter a name.')
      .max(100, 'Use at most 100 characters.')
      .nullable()
      .optional(),
  })
  .openapi('CreateCustomerRequest');

export const InvitationView = z
  .object({
    id: z.string().uuid(),
    email: z.string(),
    displayName: z.string().nullable(),
    status: z.enum(['pending', 'accepted', 'expired', 'replaced']),
    customerId: z.string().uuid().nullable().openapi({ description: 'The customer, once accepted.' }),
    expiresAt: z.string().datetime(),
    acceptedAt: z.string().datetime().nullable(),
    createdAt: z.string().datetime(),
  })
  .openapi('Invitation');

export function toInvitationView(invitation: Invitation): z.infer<typeof InvitationView> {
  return {
    ...invitation,
    expiresAt: invitation.expiresAt.toISOString(),
    acceptedAt: invitation.acceptedAt?.toISOString() ?? null,
    createdAt: invitation.createdAt.toISOString(),
  };
}

export const InvitationList = z.object({ items: z.array(InvitationView) }).openapi('InvitationList');

export const AcceptInvitationRequest = z
  .object({
    token: z.string().min(1, 'Enter the invitation token.').max(200),
    password: z
      .string()
      .min(PASSWORD_MIN_LENGTH, `Use at least ${PASSWORD_MIN_LENGTH} characters.`)
      .max(PASSWORD_MAX_LENGTH, `Use at most ${PASSWORD_MAX_LENGTH} characters.`)
      .optional()
      .openapi({ description: 'Needed only when the address has no account yet: its password.' }),
  })
  .openapi('AcceptInvitationRequest');

export const AcceptedInvitation = z
  .object({ accountCreated: z.boolean(), resellerId: z.string().uuid() })
  .openapi('AcceptedInvitation');

export const OwnResellerView = z
  .object({
    reseller: z
      .object({ id: z.string().uuid(), email: z.string(), displayName: z.string().nullable() })
      .nullable()
      .openapi({ description: 'The reseller managing this account, or null.' }),
  })
  .openapi('OwnReseller');

export function toOwnResellerView(reseller: ResellerOfAccount | null): z.infer<typeof OwnResellerView> {
  return { reseller };
}

export const EndedResellerLink = z
  .object({
    revokedKeys: z.number().int().openapi({ description: 'Keys the reseller had made, now revoked.' }),
  })
  .openapi('EndedResellerLink');

export const GrantBody = z
  .object({
    packageId: z.string().min(1).max(100).optional().openapi({
      description: 'Grant tokens of a package the reseller holds (its usable entitlements of that package).',
    }),
    tokens: PositiveIntegerString.optional().openapi({
      description: 'With packageId: how many tokens; one whole package when left out.',
    }),
    credits: PositiveIntegerString.optional().openapi({
      description: "Grant credit from the reseller's balance.",
    }),
    note: z.string().trim().max(500).optional(),
  })
  .superRefine((body, context) => {
    if ((body.packageId === undefined) === (body.credits === undefined)) {
      context.addIssue({ code: 'custom', path: ['body'], message: 'Send either packageId or credits.' });
    }
    if (body.tokens !== undefined && body.packageId === undefined) {
      context.addIssue({ code: 'custom', path: ['tokens'], message: 'tokens goes with packageId.' });
    }
  })
  .openapi('GrantRequest');

export function toGrantRequest(body: z.infer<typeof GrantBody>): GrantRequest {
  const note = body.note ? { note: body.note } : {};
  if (body.credits !== undefined) return { credits: BigInt(body.credits), ...note };
  return {
    packageId: body.packageId as string,
    ...(body.tokens === undefined ? {} : { tokens: BigInt(body.tokens) }),
    ...note,
  };
}

export const IdempotencyHeaders = z.object({
  'idempotency-key': z
    .string()
    .min(1)
    .max(200)
    .optional()
    .openapi({
      param: { name: 'idempotency-key', in: 'header' },
      description:
        'Same key and same body: the first result again, nothing granted twice. Another body: 422.',
    }),
});

export const GrantView = z
  .object({
    grantId: z.string().uuid(),
    customerId: z.string().uuid(),
    packageId: z.string().nullable(),
    tokens: z.string(),
    credits: z.string(),
    entitlementId: z.string().uuid().nullable(),
    expiresAt: z.string().nullable(),
  })
  .openapi('Grant');

export const UsageQuery = z.object({
  from: Day.optional().openapi({ description: 'First UTC day; 30 days before `to` when left out.' }),
  to: Day.optional().openapi({ description: 'Last UTC day (inclusive); today when left out.' }),
});

export function usageRange(query: z.infer<typeof UsageQuery>, now: Date): { from: string; to: string } {
  const to = query.to ?? now.toISOString().slice(0, 10);
  const from =
    query.from ??
    new Date(new Date(`${to}T00:00:00Z`).getTime() - 30 * 86_400_000).toISOString().slice(0, 10);
  return { from, to };
}

export const CustomerUsageView = z
  .object({
    customerId: z.string().uuid(),
    balance: z.object({ remaining: AmountsView, reserved: AmountsView }),
    days: z.array(UsageSummaryRowView),
  })
  .openapi('CustomerUsage');

export const ManagementScopeView = z.enum(MANAGEMENT_SCOPES);

export const CreateManagementKeyRequest = z
  .object({
    name: z.string().trim().min(1, 'Enter a name.').max(100, 'Use at most 100 characters.'),
    scopes: z.array(ManagementScopeView).min(1, 'Choose at least one scope.'),
    expiresAt: z.iso
      .datetime({ offset: true, error: 'Use an ISO 8601 date and time.' })
      .nullable()
      .optional(),
  })
  .openapi('CreateManagementKeyRequest');

export const ManagementKeyView = z
  .object({
    id: z.string().uuid(),
    name: z.string(),
    mask: z.string(),
    scopes: z.array(ManagementScopeView),
    state: z.enum(['active', 'expired', 'revoked']),
    expiresAt: z.string().nullable(),
    lastUsedAt: z.string().nullable(),
    revokedAt: z.string().nullable(),
    createdAt: z.string(),
  })
  .openapi('ManagementKey');

export const ManagementKeyWithSecret = z
  .object({
    key: ManagementKeyView,
    secret: z.string().openapi({ description: 'The full secret (mk-tg-...). Shown in this answer only.' }),
  })
  .openapi('ManagementKeyWithSecret');

export function toManagementKeyView(key: ManagementKey): z.infer<typeof ManagementKeyView> {
  return {
    id: key.id,
    name: key.name,
    mask: key.mask,
    scopes: key.scopes,
    state: key.state,
    expiresAt: key.expiresAt?.toISOString() ?? null,
    lastUsedAt: key.lastUsedAt?.toISOString() ?? null,
    revokedAt: key.revokedAt?.toISOString() ?? null,
    createdAt: key.createdAt.toISOString(),
  };
}
