import { z } from '@hono/zod-openapi';
import type { Account, AccountPage } from './accounts.service.ts';

export const AccountView = z
  .object({
    id: z.string().uuid(),
    email: z.string(),
    displayName: z.string().nullable(),
    status: z.enum(['active', 'suspended']),
    isAdmin: z.boolean(),
    isReseller: z.boolean(),
    resellerId: z.string().uuid().nullable(),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
  })
  .openapi('Account');

export const AccountPageView = z
  .object({ items: z.array(AccountView), nextCursor: z.string().nullable() })
  .openapi('AccountPage');

export const DisplayName = z.string().trim().min(1, 'Enter a name.').max(100, 'Use at most 100 characters.');

export const PageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  after: z.string().optional().openapi({ description: 'nextCursor of the previous page' }),
});

export function toAccountView(account: Account): z.infer<typeof AccountView> {
  return {
    id: account.id,
    email: account.email,
    displayName: account.displayName,
    status: account.status,
    isAdmin: account.isAdmin,
    isReseller: account.isReseller,
    resellerId: account.resellerId,
    createdAt: account.createdAt.toISOString(),
    updatedAt: account.updatedAt.toISOString(),
  };
}

export function toAccountPageView(page: AccountPage): z.infer<typeof AccountPageView> {
  return { items: page.items.map(toAccountView), nextCursor: page.nextCursor };
}
