import { createRoute, OpenAPIHono, type z } from '@hono/zod-openapi';
import { clientAddressOf, userAgentOf } from '../../http/client-address.ts';
import type { AppEnv } from '../../http/env.ts';
import { validationHook } from '../../http/errors.ts';
import {
  type ManagementEnv,
  managementActor,
  requireManagementKey,
  sessionActor,
} from '../../http/management-key.ts';
import { dataOf, errorResponses, jsonContent } from '../../http/openapi.ts';
import { managementKey, SESSION, SESSION_AND_CSRF } from '../../http/openapi-security.ts';
import { requireRole, requireSession, type SessionEnv } from '../../http/session.ts';
import type { Mailer } from '../mail/mail.service.ts';
import {
  acceptInvitation,
  endOwnReseller,
  inviteCustomer,
  listInvitations,
  readOwnReseller,
} from './invitations.service.ts';
import {
  AcceptedInvitation,
  AcceptInvitationRequest,
  CreateCustomerRequest,
  EndedResellerLink,
  InvitationList,
  InvitationView,
  OwnResellerView,
  toInvitationView,
  toOwnResellerView,
} from './resellers.schemas.ts';

const json = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});

const INVITED =
  'The invitation, emailed to the address. The same answer whether or not the address has an ' +
  'account; the customer appears in the customer list once it accepts.';

const inviteRoute = createRoute({
  method: 'post',
  path: '/reseller/customers',
  tags: ['reseller'],
  summary: 'Invite a customer by email (linked once the address accepts)',
  security: SESSION_AND_CSRF,
  middleware: [requireSession(), requireRole('reseller')] as const,
  request: { body: json(CreateCustomerRequest) },
  responses: { 201: jsonContent(dataOf(InvitationView), INVITED), ...errorResponses(401, 403, 422, 429) },
});

const listInvitationsRoute = createRoute({
  method: 'get',
  path: '/reseller/invitations',
  tags: ['reseller'],
  summary: "The reseller's invitations, newest first (the latest 200)",
  security: SESSION,
  middleware: [requireSession(), requireRole('reseller')] as const,
  responses: { 200: jsonContent(dataOf(InvitationList), 'Invitations.'), ...errorResponses(401, 403) },
});

const managementInviteRoute = createRoute({
  method: 'post',
  path: '/reseller-management/customers',
  tags: ['reseller-management'],
  summary: 'Invite a customer by email, linked once the address accepts (scope customers:write)',
  security: managementKey('customers:write'),
  middleware: [requireManagementKey('customers:write')] as const,
  request: { body: json(CreateCustomerRequest) },
  responses: { 201: jsonContent(dataOf(InvitationView), INVITED), ...errorResponses(401, 403, 422, 429) },
});

const managementListInvitationsRoute = createRoute({
  method: 'get',
  path: '/reseller-management/invitations',
  tags: ['reseller-management'],
  summary: "The reseller's invitations, newest first (scope customers:read)",
  security: managementKey('customers:read'),
  middleware: [requireManagementKey('customers:read')] as const,
  responses: { 200: jsonContent(dataOf(InvitationList), 'Invitations.'), ...errorResponses(401, 403, 429) },
});

const acceptRoute = createRoute({
  method: 'post',
  path: '/auth/accept-invitation',
  tags: ['auth'],
  summary: "Accept a reseller's invitation with the emailed token",
  description:
    'Links the address’s account to the reseller; when the address has no account, creates it with ' +
    'the password sent here.',
  request: { body: json(AcceptInvitationRequest) },
  responses: {
    200: jsonContent(dataOf(AcceptedInvitation), 'Accepted.'),
    ...errorResponses(422, 429),
  },
});

const ownResellerRoute = createRoute({
  method: 'get',
  path: '/me/reseller',
  tags: ['me'],
  summary: 'The reseller managing this account, if any',
  security: SESSION,
  middleware: [requireSession()] as const,
  responses: {
    200: jsonContent(dataOf(OwnResellerView), 'The reseller or null.'),
    ...errorResponses(401, 403),
  },
});

const endResellerRoute = createRoute({
  method: 'delete',
  path: '/me/reseller',
  tags: ['me'],
  summary: 'End the link to the reseller; the keys it made for this account are revoked',
  security: SESSION_AND_CSRF,
  middleware: [requireSession()] as const,
  responses: { 200: jsonContent(dataOf(EndedResellerLink), 'Ended.'), ...errorResponses(401, 403) },
});

export function invitationRoutes(mailer: Mailer) {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  app.openapi(acceptRoute, async (c) => {
    const deps = c.get('deps');
    const client = { ip: clientAddressOf(c, deps.config.trustProxy), userAgent: userAgentOf(c) };
    const { account, created } = await acceptInvitation(deps, c.req.valid('json'), client);
    return c.json({ data: { accountCreated: created, resellerId: account.resellerId as string } }, 200);
  });

  const sessionApp = new OpenAPIHono<SessionEnv>({ defaultHook: validationHook });
  sessionApp.openapi(inviteRoute, async (c) => {
    const invitation = await inviteCustomer(c.get('deps'), mailer, sessionActor(c), c.req.valid('json'));
    return c.json({ data: toInvitationView(invitation) }, 201);
  });
  sessionApp.openapi(listInvitationsRoute, async (c) => {
    const items = await listInvitations(c.get('deps'), c.get('auth').account.id);
    return c.json({ data: { items: items.map(toInvitationView) } }, 200);
  });
  sessionApp.openapi(ownResellerRoute, async (c) => {
    const reseller = await readOwnReseller(c.get('deps').db, c.get('auth').account);
    return c.json({ data: toOwnResellerView(reseller) }, 200);
  });
  sessionApp.openapi(endResellerRoute, async (c) => {
    const ended = await endOwnReseller(c.get('deps'), sessionActor(c));
    return c.json({ data: ended }, 200);
  });
  app.route('/', sessionApp);

  const managementApp = new OpenAPIHono<ManagementEnv>({ defaultHook: validationHook });
  managementApp.openapi(managementInviteRoute, async (c) => {
    const invitation = await inviteCustomer(c.get('deps'), mailer, managementActor(c), c.req.valid('json'));
    return c.json({ data: toInvitationView(invitation) }, 201);
  });
  managementApp.openapi(managementListInvitationsRoute, async (c) => {
    const items = await listInvitations(c.get('deps'), c.get('management').resellerId);
    return c.json({ data: { items: items.map(toInvitationView) } }, 200);
  });
  app.route('/', managementApp);
  return app;
}
