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
