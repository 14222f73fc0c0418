import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { AppEnv } from '../../http/env.ts';
import { validationHook } from '../../http/errors.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { SESSION } from '../../http/openapi-security.ts';
import { requireRole, requireSession, type SessionEnv } from '../../http/session.ts';
import { listRefusedCredentials, listUpstreamBreakers, readStatus } from './status.service.ts';

const ComponentState = z.enum(['operational', 'degraded', 'down', 'unknown']);

const Status = z
  .object({
    status: z.enum(['operational', 'degraded', 'down']),
    checkedAt: z.string(),
    gatewayUrl: z.string().openapi({ description: 'Base URL of the inference gateway for clients.' }),
    components: z.array(
      z.object({
        name: z.string().openapi({
          example: 'model:claude-sonnet',
          description:
            'A service (gateway, control-plane, database, redis) or `model:<alias>` per published model.',
        }),
        kind: z.enum(['service', 'model']),
        status: ComponentState,
        detail: z.string(),
        history: z.array(
          z.object({
            day: z.string().openapi({ example: '2026-11-23' }),
            status: ComponentState,
            samples: z.number().int(),
            operational: z.number().int(),
          }),
        ),
      }),
    ),
  })
  .openapi('ServiceStatus');

const statusRoute = createRoute({
  method: 'get',
  path: '/status',
  tags: ['public'],
  summary: 'Service status for the status page',
  description:
    'Gateway, control plane, database, Redis and each published model: the state now (gateways ' +
    'report liveness and upstream outcomes by heartbeat) and a daily history from stored samples. ' +
    'Provider identifiers and call counts are never shown.',
  responses: { 200: jsonContent(dataOf(Status), 'Status of each component.') },
});

const RefusedCredential = z
  .object({
    providerId: z.string(),
    credential: z.string().openapi({ description: "The credential's name; its value is never shown." }),
    upstreamStatus: z.number().int().nullable(),
    refusedAt: z.string(),
    gateways: z.number().int().openapi({ description: 'Live gateways that took it out of rotation.' }),
  })
  .openapi('RefusedCredential');

const refusedCredentialsRoute = createRoute({
  method: 'get',
  path: '/admin/routing/credentials',
  tags: ['admin'],
  summary: 'Provider credentials the gateways took out of rotation',
  description:
    'Credentials of a provider (by name) that the provider refused (401/403): the gateways stopped ' +
    "sending them and use the pool's others; reported by each live gateway's heartbeat.",
  security: SESSION,
  middleware: [requireSession(), requireRole('admin')] as const,
  responses: {
    200: jsonContent(dataOf(z.array(RefusedCredential)), 'Refused credentials.'),
    ...errorResponses(401, 403),
  },
});

const UpstreamBreaker = z
  .object({
    providerId: z.string(),
    upstreamModel: z.string(),
    state: z.enum(['open', 'closed']).openapi({
      description: 'open: left out of calls until openUntil, then one probe; closed: only benched.',
    }),
    reason: z.string().nullable().openapi({
      description: 'Why it opened: consecutive_failures, error_rate or probe_failed.',
    }),
    cause: z.string().nullable().openapi({
      description: "The failure that opened or benched it: a code and the provider's status.",
    }),
    trips: z.number().int().openapi({ description: 'Cool-downs in a row (each failed probe adds one).' }),
    failures: z.number().int().openapi({ description: 'Failures in the window when it opened.' }),
    calls: z.number().int().openapi({ description: 'Calls in the window when it opened.' }),
    changedAt: z.string(),
    openUntil: z.string().nullable(),
    benchedUntil: z.string().nullable().openapi({ description: "When the provider's Retry-After ends." }),
  })
  .openapi('UpstreamBreaker');

const upstreamBreakersRoute = createRoute({
  method: 'get',
  path: '/admin/routing/breakers',
  tags: ['admin'],
  summary: 'Upstreams whose circuit breaker is open, or benched by a Retry-After',
  description:
    'Each upstream (provider and model) the gateways leave out of calls, with why (docs/routing.md): ' +
    "the breaker's reason and the failure that opened it, its cool-down and the provider's Retry-After; " +
    'shared by every gateway and reported by the latest heartbeat. Upstreams not listed are closed.',
  security: SESSION,
  middleware: [requireSession(), requireRole('admin')] as const,
  responses: {
    200: jsonContent(dataOf(z.array(UpstreamBreaker)), 'Open and benched upstreams.'),
    ...errorResponses(401, 403),
  },
});

export function statusRoutes() {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  app.openapi(statusRoute, async (c) => {
    c.header('Cache-Control', 'no-store');
    return c.json({ data: await readStatus(c.get('deps')) }, 200);
  });
  return app;
}

export function routingAdminRoutes() {
  const app = new OpenAPIHono<SessionEnv>({ defaultHook: validationHook });
  app.openapi(refusedCredentialsRoute, async (c) =>
    c.json({ data: await listRefusedCredentials(c.get('deps')) }, 200),
  );
  app.openapi(upstreamBreakersRoute, async (c) =>
    c.json({ data: await listUpstreamBreakers(c.get('deps')) }, 200),
  );
  return app;
}
