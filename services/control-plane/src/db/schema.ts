import type { AccountsTable } from '../modules/accounts/accounts.table.ts';
import type { ApiKeysTable } from '../modules/api-keys/api-keys.table.ts';
import type { AccountKeyLimitsTable } from '../modules/api-keys/key-limits.table.ts';
import type { AuditLogTable } from '../modules/audit/audit.table.ts';
import type {
  EmailCodesTable,
  SessionsTable,
  TwoFactorRecoveryCodesTable,
  TwoFactorSecretsTable,
} from '../modules/auth/auth.table.ts';
import type {
  CreditBalancesTable,
  CreditGrantKeysTable,
  EntitlementsTable,
  HotLeasePartsTable,
  HotLeasesTable,
  LedgerEntriesTable,
  ReservationRoutesTable,
  ReservationsTable,
} from '../modules/billing/billing.table.ts';
import type {
  AliasUpstreamsTable,
  CatalogSettingsTable,
  ModelAliasesTable,
  PackagesTable,
  ProvidersTable,
  UpstreamCostsTable,
} from '../modules/catalog/catalog.table.ts';
import type { OutboxEmailsTable } from '../modules/mail/mail.table.ts';
import type {
  ManagementKeysTable,
  ResellerGrantsTable,
} from '../modules/management-keys/management-keys.table.ts';
import type {
  EmailNoticesTable,
  EmailSettingsTable,
  LowBalanceArmedTable,
} from '../modules/notifications/notifications.table.ts';
import type { OrdersTable } from '../modules/orders/orders.table.ts';
import type { PaymentEventsTable, PaymentsTable } from '../modules/payments/payments.table.ts';
import type { PromotionRedemptionsTable, PromotionsTable } from '../modules/promotions/promotions.table.ts';
import type { ResellerInvitationsTable } from '../modules/resellers/invitations.table.ts';
import type {
  SpendCapAccountsTable,
  SpendCapCountersTable,
  SpendCapsTable,
  SpendCapUsageTable,
} from '../modules/spend-caps/spend-caps.table.ts';
import type {
  StatusGatewaysTable,
  StatusProviderOutcomesTable,
  StatusSamplesTable,
} from '../modules/status/status.table.ts';
import type { ThrottleBucketsTable } from '../modules/throttle/throttle.table.ts';
import type { AutoTopUpsTable } from '../modules/top-ups/top-ups.table.ts';

/** Every table, as Kysely sees it. Each table's type lives in the module that owns it. */
export interface Database {
  accounts: AccountsTable;
  sessions: SessionsTable;
  email_codes: EmailCodesTable;
  two_factor_secrets: TwoFactorSecretsTable;
  two_factor_recovery_codes: TwoFactorRecoveryCodesTable;
  email_settings: EmailSettingsTable;
  email_notices: EmailNoticesTable;
  low_balance_armed: LowBalanceArmedTable;
  outbox_emails: OutboxEmailsTable;
  throttle_buckets: ThrottleBucketsTable;
  api_keys: ApiKeysTable;
  account_key_limits: AccountKeyLimitsTable;
  providers: ProvidersTable;
  model_aliases: ModelAliasesTable;
  alias_upstreams: AliasUpstreamsTable;
  upstream_costs: UpstreamCostsTable;
  packages: PackagesTable;
  entitlements: EntitlementsTable;
  credit_balances: CreditBalancesTable;
  credit_grant_keys: CreditGrantKeysTable;
  reservations: ReservationsTable;
  reservation_routes: ReservationRoutesTable;
  ledger_entries: LedgerEntriesTable;
  hot_leases: HotLeasesTable;
  hot_lease_parts: HotLeasePartsTable;
  management_keys: ManagementKeysTable;
  reseller_grants: ResellerGrantsTable;
  reseller_invitations: ResellerInvitationsTable;
  audit_log: AuditLogTable;
  status_gateways: StatusGatewaysTable;
  status_provider_outcomes: StatusProviderOutcomesTable;
  status_samples: StatusSamplesTable;
  promotions: PromotionsTable;
  promotion_redemptions: PromotionRedemptionsTable;
  orders: OrdersTable;
  payments: PaymentsTable;
  payment_events: PaymentEventsTable;
  spend_cap_accounts: SpendCapAccountsTable;
  spend_caps: SpendCapsTable;
  spend_cap_usage: SpendCapUsageTable;
  spend_cap_counters: SpendCapCountersTable;
  catalog_settings: CatalogSettingsTable;
  auto_top_ups: AutoTopUpsTable;
}
