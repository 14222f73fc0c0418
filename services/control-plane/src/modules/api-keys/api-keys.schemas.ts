import { z } from '@hono/zod-openapi';
import { KEY_STATES } from '@tollgate/schemas';
import { SpendCapView } from '../spend-caps/spend-caps.schemas.ts';
import type { ApiKey } from './api-keys.service.ts';

const INT4_MAX = 2_147_483_647;
export const Ceiling = (what: string) =>
  z
    .number({ error: `${what} must be a whole number.` })
    .int(`${what} must be a whole number.`)
    .positive(`${what} must be positive.`)
    .max(INT4_MAX, `${what} is too large.`);

export const Alias = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/, 'Use a model alias (letters, digits, . _ : / -).');

export const KeyLimitsView = z
  .object({
    maxRequestBytes: z.number().int(),
    maxOutputTokens: z.number().int(),
    requestsPerMinute: z.number().int(),
    concurrency: z.number().int(),
  })
  .openapi('KeyLimits');

export const CreateKeyRequest = z
  .object({
    name: z.string().trim().min(1, 'Enter a name.').max(100, 'Use at most 100 characters.'),
    scope: z
      .array(Alias)
      .min(1, 'Leave scope out (or null) to allow every model.')
      .max(100, 'Use at most 100 aliases.')
      .nullable()
      .optional()
      .openapi({ description: 'Model aliases this key may call; absent or null for all.' }),
    expiresAt: z.iso
      .datetime({ offset: true, error: 'Use an ISO 8601 date and time.' })
      .nullable()
      .optional(),
    limits: z
      .object({
        maxRequestBytes: Ceiling('maxRequestBytes').optional(),
        maxOutputTokens: Ceiling('maxOutputTokens').optional(),
        requestsPerMinute: Ceiling('requestsPerMinute').optional(),
        concurrency: Ceiling('concurrency').optional(),
      })
      .optional()
      .openapi({ description: 'Per-key ceilings; each one left out takes the configured default.' }),
  })
  .openapi('CreateKeyRequest');

export const ApiKeyView = z
  .object({
    id: z.string().uuid(),
    name: z.string(),
    mask: z.string().openapi({ description: 'Enough to recognise the key, never enough to use it.' }),
    state: z.enum(KEY_STATES),
    scope: z.array(z.string()).nullable(),
    expiresAt: z.string().datetime().nullable(),
    limits: KeyLimitsView,
    revealable: z.boolean().openapi({ description: 'Whether POST .../reveal can copy the current secret.' }),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
    rotatedAt: z.string().datetime().nullable(),
    revokedAt: z.string().datetime().nullable(),
    lastUsedAt: z.string().datetime().nullable().openapi({
      description: 'About when it last called a model (recorded at most once an hour); null: never.',
    }),
  })
  .openapi('ApiKey');

export const KeyWithSecret = z
  .object({
    key: ApiKeyView,
    secret: z.string().openapi({ description: 'The full secret (sk-...). Shown in this answer only.' }),
  })
  .openapi('ApiKeyWithSecret');

export const KeyStatusChangeRequest = z
  .object({ status: z.enum(['active', 'disabled', 'revoked'], 'Use active, disabled or revoked.') })
  .openapi('KeyStatusChangeRequest');

export const KeyStatusView = z
  .object({
    keyId: z.string(),
    name: z.string(),
    state: z.enum(KEY_STATES),
    expiresAt: z.string().nullable(),
    scope: z.array(z.string()).nullable(),
    limits: KeyLimitsView,
    remaining: z.object({ tokens: z.string(), credits: z.string() }),
    reserved: z.object({ tokens: z.string(), credits: z.string() }),
    caps: z.array(SpendCapView).openapi({ description: 'Every spend cap on the key and on its account.' }),
  })
  .openapi('KeyStatus');

export const RevealedKey = z.object({ id: z.string(), secret: z.string() }).openapi('RevealedKey');

export const KeyIdParam = z.object({ id: z.string().openapi({ param: { name: 'id', in: 'path' } }) });

export function toApiKeyView(key: ApiKey): z.infer<typeof ApiKeyView> {
  return {
    id: key.id,
    name: key.name,
    mask: key.mask,
    state: key.state,
    scope: key.scope,
    expiresAt: key.expiresAt?.toISOString() ?? null,
    limits: key.limits,
    revealable: key.revealable,
    createdAt: key.createdAt.toISOString(),
    updatedAt: key.updatedAt.toISOString(),
    rotatedAt: key.rotatedAt?.toISOString() ?? null,
    revokedAt: key.revokedAt?.toISOString() ?? null,
    lastUsedAt: key.lastUsedAt?.toISOString() ?? null,
  };
}
