import { OpenAPIHono } from '@hono/zod-openapi';
import type { Dependencies } from '../deps.ts';
import { adminRoutes } from '../modules/accounts/admin.routes.ts';
import { adminViewRoutes } from '../modules/accounts/admin-views.routes.ts';
import { meRoutes } from '../modules/accounts/me.routes.ts';
import { apiKeyRoutes } from '../modules/api-keys/api-keys.routes.ts';
import { keyLimitsRoutes } from '../modules/api-keys/key-limits.routes.ts';
import { authRoutes } from '../modules/auth/auth.routes.ts';
import { sessionRoutes } from '../modules/auth/sessions.routes.ts';
import { twoFactorRoutes } from '../modules/auth/two-factor.routes.ts';
import { billingRoutes } from '../modules/billing/billing.routes.ts';
import { holdsRoutes } from '../modules/billing/holds.routes.ts';
import { adminCatalogRoutes, publicCatalogRoutes } from '../modules/catalog/catalog.routes.ts';
import { healthRoutes } from '../modules/health/health.routes.ts';
import { createMailer, type Mailer } from '../modules/mail/mail.service.ts';
import { createMailSender } from '../modules/mail/mail-sender.ts';
import { emailSettingsRoutes } from '../modules/notifications/notifications.routes.ts';
import { adminOrderRoutes } from '../modules/orders/admin-orders.routes.ts';
import { orderRoutes } from '../modules/orders/orders.routes.ts';
import { paymentWebhookRoutes } from '../modules/payments/payments.routes.ts';
import { promotionRoutes } from '../modules/promotions/promotions.routes.ts';
import { invitationRoutes } from '../modules/resellers/invitations.routes.ts';
import { resellerRoutes } from '../modules/resellers/reseller.routes.ts';
import { resellerKeyRoutes } from '../modules/resellers/reseller-keys.routes.ts';
import { resellerManagementRoutes } from '../modules/resellers/reseller-management.routes.ts';
import { spendCapManagementRoutes, spendCapRoutes } from '../modules/spend-caps/spend-caps.routes.ts';
import { routingAdminRoutes, statusRoutes } from '../modules/status/status.routes.ts';
import { autoTopUpRoutes } from '../modules/top-ups/top-ups.routes.ts';
import { limitBodySize } from './body-limit.ts';
import { dashboardAssets, securityHeaders } from './dashboard-assets.ts';
import type { AppEnv } from './env.ts';
import { handleError, handleNotFound, validationHook } from './errors.ts';
import { refuseInferenceKeys } from './inference-key-guard.ts';
import { refuseManagementKeysOutsideTheirArea } from './management-key.ts';
import { openApiDocumentOf } from './openapi.ts';
import { registerSecuritySchemes } from './openapi-security.ts';
import { requestContext } from './request-context.ts';

/** The public API under /api/v1 (dashboard, admin, reseller), with its OpenAPI document. */
export function createPublicApp(deps: Dependencies, options: { mailer?: Mailer } = {}) {
  const mailer =
    options.mailer ??
    createMailer({
      db: deps.db,
      sender: createMailSender(deps.config, deps.logger),
      clock: deps.clock,
      logger: deps.logger,
    });

  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  app.use('*', securityHeaders());
  app.use('*', requestContext(deps));
  app.use('*', refuseManagementKeysOutsideTheirArea());
  app.use(
    '*',
    limitBodySize({
      defaultMaxBytes: deps.config.bodyLimits.defaultBytes,
      overrides: [
        { method: 'PUT', path: /^\/api\/v1\/admin\/catalog\//, maxBytes: deps.config.bodyLimits.largeBytes },
        // Stripe sends whole event objects; they can outgrow the small default.
        {
          method: 'POST',
          path: /^\/api\/v1\/payments\/stripe\/webhook$/,
          maxBytes: deps.config.bodyLimits.largeBytes,
        },
      ],
    }),
  );
  app.onError(handleError);
  app.notFound(handleNotFound);

  const api = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  api.use('*', refuseInferenceKeys());
  api.route('/', healthRoutes());
  api.route('/', authRoutes(mailer));
  api.route('/', meRoutes());
  api.route('/', sessionRoutes(mailer));
  api.route('/', twoFactorRoutes(mailer));
  api.route('/', emailSettingsRoutes());
  api.route('/', keyLimitsRoutes());
  api.route('/', apiKeyRoutes());
  api.route('/', adminRoutes(mailer));
  api.route('/', adminViewRoutes());
  api.route('/', resellerRoutes());
  api.route('/', invitationRoutes(mailer));
  api.route('/', resellerKeyRoutes());
  api.route('/', resellerManagementRoutes());
  api.route('/', spendCapRoutes());
  api.route('/', spendCapManagementRoutes());
  api.route('/', publicCatalogRoutes());
  api.route('/', adminCatalogRoutes());
  api.route('/', billingRoutes());
  api.route('/', holdsRoutes());
  api.route('/', statusRoutes());
  api.route('/', routingAdminRoutes());
  api.route('/', orderRoutes());
  api.route('/', autoTopUpRoutes());
  api.route('/', adminOrderRoutes());
  api.route('/', promotionRoutes());
  api.route('/', paymentWebhookRoutes());

  app.route('/api/v1', api);
  app.use('*', dashboardAssets(deps.config.dashboardDir));
  registerSecuritySchemes(app, deps.config);
  // Generated once, on first request, when every route is registered.
  let document: ReturnType<typeof openApiDocumentOf> | undefined;
  app.get('/api/v1/openapi.json', (c) => {
    document ??= openApiDocumentOf(app);
    return c.json(document);
  });
  return Object.assign(app, { mailer });
}
