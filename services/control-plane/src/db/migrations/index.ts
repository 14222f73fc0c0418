import type { Migration } from 'kysely/migration';
import * as identity from './0001_identity.ts';
import * as billing from './0002_billing.ts';
import * as billingFunctions from './0003_billing_functions.ts';
import * as billingHardening from './0004_billing_hardening.ts';
import * as commerce from './0005_commerce.ts';
import * as resellers from './0006_resellers.ts';
import * as security from './0007_security.ts';
import * as usageRollup from './0008_usage_rollup.ts';
import * as status from './0009_status.ts';
import * as settleFlush from './0010_settle_flush.ts';
import * as keyFirstUse from './0011_key_first_use.ts';
import * as hotTier from './0012_hot_tier.ts';
import * as keyActivity from './0013_key_activity.ts';
import * as creditGrantKeys from './0014_credit_grant_keys.ts';
import * as providerKinds from './0015_provider_kinds.ts';
import * as aliasUpstreams from './0016_alias_upstreams.ts';
import * as resellerInvitations from './0017_reseller_invitations.ts';
import * as usageParts from './0018_usage_parts.ts';
import * as credentialPools from './0019_credential_pools.ts';
import * as usagePartsBilling from './0020_usage_parts_billing.ts';
import * as upstreamCosts from './0021_upstream_costs.ts';
import * as spendCaps from './0022_spend_caps.ts';
import * as upstreamCapacity from './0023_upstream_capacity.ts';
import * as upstreamBreakers from './0024_upstream_breakers.ts';
import * as moneyTopUp from './0025_money_top_up.ts';
import * as twoFactor from './0026_two_factor.ts';
import * as emailNotices from './0027_email_notices.ts';
import * as oneAuditLog from './0028_one_audit_log.ts';
import * as weightedPackages from './0029_weighted_packages.ts';
import * as spendCapCounters from './0030_spend_cap_counters.ts';
import * as usageLocalDays from './0031_usage_local_days.ts';

/** Every migration, by name. Names sort in the order they apply. */
export const migrations: Record<string, Migration> = {
  '0001_identity': identity,
  '0002_billing': billing,
  '0003_billing_functions': billingFunctions,
  '0004_billing_hardening': billingHardening,
  '0005_commerce': commerce,
  '0006_resellers': resellers,
  '0007_security': security,
  '0008_usage_rollup': usageRollup,
  '0009_status': status,
  '0010_settle_flush': settleFlush,
  '0011_key_first_use': keyFirstUse,
  '0012_hot_tier': hotTier,
  '0013_key_activity': keyActivity,
  '0014_credit_grant_keys': creditGrantKeys,
  '0015_provider_kinds': providerKinds,
  '0016_alias_upstreams': aliasUpstreams,
  '0017_reseller_invitations': resellerInvitations,
  '0018_usage_parts': usageParts,
  '0019_credential_pools': credentialPools,
  '0020_usage_parts_billing': usagePartsBilling,
  '0021_upstream_costs': upstreamCosts,
  '0022_spend_caps': spendCaps,
  '0023_upstream_capacity': upstreamCapacity,
  '0024_upstream_breakers': upstreamBreakers,
  '0025_money_top_up': moneyTopUp,
  '0026_two_factor': twoFactor,
  '0027_email_notices': emailNotices,
  '0028_one_audit_log': oneAuditLog,
  '0029_weighted_packages': weightedPackages,
  '0030_spend_cap_counters': spendCapCounters,
  '0031_usage_local_days': usageLocalDays,
};
