import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { AppEnv } from '../../http/env.ts';
import { validationHook } from '../../http/errors.ts';
import { sessionActor } from '../../http/management-key.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { SESSION, SESSION_AND_CSRF } from '../../http/openapi-security.ts';
import { requireRole, requireSession, type SessionEnv } from '../../http/session.ts';
import {
  AdminCatalogView,
  CreditValueView,
  PublicModelView,
  PublicPackageView,
  PutAliasRequest,
  PutPackageRequest,
  PutProviderRequest,
} from './catalog.schemas.ts';
import {
  listPublishedModels,
  listPublishedPackages,
  putAlias,
  putPackage,
  putProvider,
  readCreditValue,
  readFullCatalog,
} from './catalog.service.ts';
import { readFileManaged, refuseFileManaged } from './file-managed.ts';
import { testProviderConnection } from './provider-test.ts';

const modelsRoute = createRoute({
  method: 'get',
  path: '/catalog/models',
  tags: ['public'],
  summary: 'Published model catalogue',
  responses: { 200: jsonContent(dataOf(z.array(PublicModelView)), 'Published models.') },
});

const packagesRoute = createRoute({
  method: 'get',
  path: '/catalog/packages',
  tags: ['public'],
  summary: 'Published package catalogue',
  responses: { 200: jsonContent(dataOf(z.array(PublicPackageView)), 'Published packages.') },
});

const creditRoute = createRoute({
  method: 'get',
  path: '/catalog/credit',
  tags: ['public'],
  summary: 'What a credit is worth in money, and the bounds of a top-up',
  responses: { 200: jsonContent(dataOf(CreditValueView), 'The credit value.') },
});

/** GET /catalog/models, /catalog/packages and /catalog/credit: no credential, published entries only. */
export function publicCatalogRoutes() {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  app.openapi(creditRoute, async (c) => c.json({ data: await readCreditValue(c.get('deps')) }, 200));
  app.openapi(modelsRoute, async (c) => c.json({ data: await listPublishedModels(c.get('deps')) }, 200));
  app.openapi(packagesRoute, async (c) => c.json({ data: await listPublishedPackages(c.get('deps')) }, 200));
  return app;
}

const Updated = z.object({ updated: z.literal(true) });
const FILE_RULE =
  'An entry of the catalogue file (CATALOG_FILE) is managed by the file and refused here (forbidden, ' +
  'saying to change the file): the control plane writes the file over its entries at every start.';

const readRoute = createRoute({
  method: 'get',
  path: '/admin/catalog',
  tags: ['admin'],
  summary: 'The whole catalogue, upstream details included',
  security: SESSION,
  middleware: [requireSession(), requireRole('admin')] as const,
  responses: { 200: jsonContent(dataOf(AdminCatalogView), 'The catalogue.'), ...errorResponses(401, 403) },
});

const aliasRoute = createRoute({
  method: 'put',
  path: '/admin/catalog/aliases/{alias}',
  tags: ['admin'],
  summary: 'Create or re-point a model alias (one upstream or several)',
  security: SESSION_AND_CSRF,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: {
    params: z.object({ alias: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/) }),
    body: { required: true, content: { 'application/json': { schema: PutAliasRequest } } },
  },
  description: FILE_RULE,
  responses: { 200: jsonContent(dataOf(Updated), 'Saved.'), ...errorResponses(401, 403, 422) },
});

const providerRoute = createRoute({
  method: 'put',
  path: '/admin/catalog/providers/{id}',
  tags: ['admin'],
  summary: 'Create or change a provider (its credential is a name, never a secret)',
  security: SESSION_AND_CSRF,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: {
    params: z.object({ id: z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/) }),
    body: { required: true, content: { 'application/json': { schema: PutProviderRequest } } },
  },
  description: FILE_RULE,
  responses: { 200: jsonContent(dataOf(Updated), 'Saved.'), ...errorResponses(401, 403, 422) },
});

const packageRoute = createRoute({
  method: 'put',
  path: '/admin/catalog/packages/{id}',
  tags: ['admin'],
  summary: 'Create or change a package',
  security: SESSION_AND_CSRF,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: {
    params: z.object({ id: z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/) }),
    body: { required: true, content: { 'application/json': { schema: PutPackageRequest } } },
  },
  description: FILE_RULE,
  responses: { 200: jsonContent(dataOf(Updated), 'Saved.'), ...errorResponses(401, 403, 422) },
});

const ProviderTestView = z
  .object({
    ok: z.boolean().describe('The provider answered 2xx.'),
    latencyMs: z.number().int().describe('From sending the request to the whole answer read.'),
    upstreamStatus: z.number().int().nullable().describe("The provider's HTTP status; null: not reached."),
    answer: z
      .string()
      .describe("The answer's text, or the provider's error message, shortened; never a credential."),
    credential: z.string().nullable().describe('The name of the credential sent (never its value).'),
  })
  .openapi('ProviderTest');

const providerTestRoute = createRoute({
  method: 'post',
  path: '/admin/catalog/providers/{id}/test',
  tags: ['admin'],
  summary: "Make one real call to a provider's model and show the latency and the answer",
  description:
    'A gateway (GATEWAY_INTERNAL_URL) sends the provider a one-line prompt with a few output tokens, ' +
    "with the provider's credential; nothing is metered. Works for entries of the catalogue file too.",
  security: SESSION_AND_CSRF,
  middleware: [requireSession(), requireRole('admin')] as const,
  request: {
    params: z.object({ id: z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/) }),
    body: {
      required: true,
      content: {
        'application/json': { schema: z.object({ upstreamModel: z.string().min(1).max(256) }).strict() },
      },
    },
  },
  responses: {
    200: jsonContent(dataOf(ProviderTestView), 'What the provider answered.'),
    ...errorResponses(401, 403, 404, 422),
  },
});

/** Admin catalogue: read everything, change aliases, providers and packages. */
export function adminCatalogRoutes() {
  const app = new OpenAPIHono<SessionEnv>({ defaultHook: validationHook });
  app.openapi(readRoute, async (c) => {
    const deps = c.get('deps');
    const [catalog, managedByFile] = await Promise.all([readFullCatalog(deps), readFileManaged(deps)]);
    return c.json({ data: { ...catalog, managedByFile } }, 200);
  });
  app.openapi(aliasRoute, async (c) => {
    await refuseFileManaged(c.get('deps'), 'aliases', c.req.valid('param').alias);
    const body = c.req.valid('json');
    await putAlias(c.get('deps'), sessionActor(c), c.req.valid('param').alias, {
      ...body,
      upstreams: body.upstreams?.map((upstream) => ({
        ...upstream,
        priority: upstream.priority ?? 0,
        weight: upstream.weight ?? 1,
      })),
      price: body.price,
    });
    return c.json({ data: { updated: true as const } }, 200);
  });
  app.openapi(providerRoute, async (c) => {
    await refuseFileManaged(c.get('deps'), 'providers', c.req.valid('param').id);
    await putProvider(c.get('deps'), sessionActor(c), c.req.valid('param').id, c.req.valid('json'));
    return c.json({ data: { updated: true as const } }, 200);
  });
  app.openapi(providerTestRoute, async (c) => {
    const result = await testProviderConnection(
      c.get('deps'),
      c.req.valid('param').id,
      c.req.valid('json').upstreamModel,
    );
    return c.json({ data: result }, 200);
  });
  app.openapi(packageRoute, async (c) => {
    await refuseFileManaged(c.get('deps'), 'packages', c.req.valid('param').id);
    const body = c.req.valid('json');
    await putPackage(c.get('deps'), sessionActor(c), c.req.valid('param').id, {
      id: c.req.valid('param').id,
      name: body.name,
      tokens: BigInt(body.tokens),
      validity_days: body.validityDays,
      aliases: body.aliases,
      max_output_tokens: body.ceilings.maxOutputTokens,
      requests_per_minute: body.ceilings.requestsPerMinute,
      concurrency: body.ceilings.concurrency,
      price_amount: BigInt(body.price.amount),
      price_currency: body.price.currency,
      price_exponent: body.price.exponent,
      published: body.published,
      counts: body.counts ?? 'tokens',
    });
    return c.json({ data: { updated: true as const } }, 200);
  });
  return app;
}
