/**
 * Contracts of the internal billing API between the gateway and the control plane.
 * Both sides import these; the control plane validates requests with them and the gateway
 * validates answers with them. All token and credit quantities are integer strings on the wire.
 *
 * Routes (internal port, `Authorization: Bearer <service token>`):
 *   GET  /internal/v1/catalog                 -> GatewayCatalog
 *   POST /internal/v1/keys/resolve            ResolveKeyRequest -> ResolvedKey
 *   POST /internal/v1/keys/status             ResolveKeyRequest -> KeyStatus
 *   POST /internal/v1/reservations            ReserveBatchRequest -> ReserveBatchResponse
 *   POST /internal/v1/reservations/finish     FinishBatchRequest -> FinishBatchResponse
 */
import { z } from 'zod';
import { QuantityString } from './quantity.ts';

/** The four inference protocols an alias may support. */
export const PROTOCOLS = ['messages', 'count_tokens', 'responses', 'chat_completions'] as const;
export const Protocol = z.enum(PROTOCOLS);
export type Protocol = z.infer<typeof Protocol>;

/** The three metered surfaces. */
export const METERED_SURFACES = ['messages', 'responses', 'chat_completions'] as const;
export const MeteredSurface = z.enum(METERED_SURFACES);
export type MeteredSurface = z.infer<typeof MeteredSurface>;

export const KEY_STATES = ['active', 'disabled', 'revoked', 'expired'] as const;
export const KeyState = z.enum(KEY_STATES);
export type KeyState = z.infer<typeof KeyState>;

/** Upstream protocol families; OpenAI-compatible servers are configuration of `openai`. */
export const PROVIDER_KINDS = ['anthropic', 'openai', 'azure-openai', 'gemini', 'bedrock', 'vertex'] as const;
export const ProviderKind = z.enum(PROVIDER_KINDS);
export type ProviderKind = z.infer<typeof ProviderKind>;

/** Lower-case hex SHA-256 of the presented secret. The gateway never sends the secret itself. */
export const KeyDigest = z.string().regex(/^[0-9a-f]{64}$/);

const Id = z.string().min(1).max(64);
const Alias = z.string().min(1).max(128);
const IsoTime = z.string().datetime({ offset: true });

// ---------------------------------------------------------------------------------------------
// Prices.

/**
 * An alias's credit prices (docs/pricing.md): credits per token of each usage part, and per call.
 * Integer strings. Reasoning tokens are output.
 */
export const AliasPrice = z.object({
  input: QuantityString,
  output: QuantityString,
  /** Per token read from the prompt cache. */
  cacheRead: QuantityString,
  /** Per token written to the cache for five minutes (or for a lifetime not reported). */
  cacheWrite: QuantityString,
  /** Per token written to the cache for an hour. */
  cacheWrite1h: QuantityString,
  /** Per call paid from credit. */
  request: QuantityString,
});
export type AliasPrice = z.infer<typeof AliasPrice>;

/** The prices an operator writes: input and output, the rest optional. */
export interface AliasPriceInput {
  input: string | number | bigint;
  output: string | number | bigint;
  cacheRead?: string | number | bigint | null | undefined;
  cacheWrite?: string | number | bigint | null | undefined;
  cacheWrite1h?: string | number | bigint | null | undefined;
  request?: string | number | bigint | null | undefined;
}

/**
 * Every price of an alias, the ones not given filled in so that an alias priced only per input and
 * output token charges what it did before cache tokens were priced apart: cache reads and writes
 * at the input price, one-hour writes at the five-minute write price, nothing per call.
 */
export function completePrice(price: AliasPriceInput): AliasPrice {
  const text = (value: string | number | bigint) => String(value);
  const given = (value: string | number | bigint | null | undefined) =>
    value === null || value === undefined ? undefined : text(value);
  const cacheWrite = given(price.cacheWrite) ?? text(price.input);
  return {
    input: text(price.input),
    output: text(price.output),
    cacheRead: given(price.cacheRead) ?? text(price.input),
    cacheWrite,
    cacheWrite1h: given(price.cacheWrite1h) ?? cacheWrite,
    request: given(price.request) ?? '0',
  };
}

/**
 * The highest price an input token of a call may be charged (R5): the estimate's input is reserved
 * at it, since which part each input token falls in is known only from the answer.
 */
export function highestInputPrice(price: AliasPrice): bigint {
  let highest = 0n;
  for (const value of [price.input, price.cacheRead, price.cacheWrite, price.cacheWrite1h]) {
    if (BigInt(value) > highest) highest = BigInt(value);
  }
  return highest;
}

/**
 * What a usage costs when credit pays all of it: every part at its price, plus the price per call
 * (charged only when there is a token to pay for, as the engines do).
 */
export function costOf(usage: Usage, price: AliasPrice): bigint {
  const parts = usageParts(usage);
  if (parts.input + parts.output + parts.cacheRead + parts.cacheWrite + parts.cacheWrite1h === 0n) return 0n;
  return (
    parts.input * BigInt(price.input) +
    parts.output * BigInt(price.output) +
    parts.cacheRead * BigInt(price.cacheRead) +
    parts.cacheWrite * BigInt(price.cacheWrite) +
    parts.cacheWrite1h * BigInt(price.cacheWrite1h) +
    BigInt(price.request)
  );
}

// ---------------------------------------------------------------------------------------------
// Catalogue as the gateway needs it (upstream details included; never shown publicly).

export const GatewayProvider = z.object({
  id: Id,
  kind: ProviderKind,
  baseUrl: z.string().url(),
  /** Name of the secret (environment variable or secrets-file entry); null when none is needed. */
  credentialRef: z.string().nullable(),
  /**
   * Every credential name of the provider's pool, credentialRef first (docs/routing.md); empty
   * when it needs none. Absent from an older control plane: credentialRef alone.
   */
  credentialRefs: z.array(z.string()).optional(),
});
export type GatewayProvider = z.infer<typeof GatewayProvider>;

/**
 * How a package counts (docs/billing/rules.md R2b): raw tokens, or weighted units (a token of an
 * alias costs the alias's package rate). The rate is an integer from 1 to PACKAGE_RATE_MAX.
 */
export const PACKAGE_COUNTS = ['tokens', 'weighted'] as const;
export type PackageCounts = (typeof PACKAGE_COUNTS)[number];
export const PACKAGE_RATE_MAX = 1_000_000_000;

/** Bounds of an alias's upstream list (docs/routing.md). */
export const UPSTREAMS_MAX = 16;
export const UPSTREAM_PRIORITY_MAX = 100;
export const UPSTREAM_WEIGHT_MAX = 1000;

/** One upstream of an alias: a provider and its model id, tried by priority then weight. */
export const GatewayUpstream = z.object({
  providerId: Id,
  upstreamModel: z.string().min(1),
  /** Lower first; the next priority serves only when every upstream of this one failed. */
  priority: z.number().int().min(0).max(UPSTREAM_PRIORITY_MAX),
  /** Share of the calls among the upstreams of one priority. */
  weight: z.number().int().positive().max(UPSTREAM_WEIGHT_MAX),
  /**
   * The provider's limits on the operator's account, for this upstream: calls at once and calls
   * per minute across all gateways; an upstream at either is skipped (null or absent: none).
   */
  maxConcurrency: z.number().int().positive().nullable().optional(),
  requestsPerMinute: z.number().int().positive().nullable().optional(),
});
export type GatewayUpstream = z.infer<typeof GatewayUpstream>;

export const GatewayAlias = z.object({
  alias: Alias,
  published: z.boolean(),
  protocols: z.array(Protocol),
  /** The first upstream (the one the reservation answers). */
  providerId: Id,
  upstreamModel: z.string().min(1),
  /** Every upstream that may serve the alias, the first one included; never empty. */
  upstreams: z.array(GatewayUpstream).min(1).max(UPSTREAMS_MAX),
  defaultMaxOutputTokens: z.number().int().positive(),
  maxOutputTokens: z.number().int().positive(),
  /** Credit prices, shown in /v1/models; null when only packages pay. Absent from older control planes. */
  price: AliasPrice.nullable().optional(),
  /**
   * Units of a weighted package one token of this alias costs (docs/billing/rules.md R2b), an
   * integer string, shown in /v1/models. Absent from older control planes: 1.
   */
  packageRate: z
    .string()
    .regex(/^[1-9][0-9]{0,9}$/)
    .optional(),
});
export type GatewayAlias = z.infer<typeof GatewayAlias>;

export const GatewayCatalog = z.object({
  providers: z.array(GatewayProvider),
  aliases: z.array(GatewayAlias),
});
export type GatewayCatalog = z.infer<typeof GatewayCatalog>;

// ---------------------------------------------------------------------------------------------
// Keys.

export const ResolveKeyRequest = z.object({ keyDigest: KeyDigest });
export type ResolveKeyRequest = z.infer<typeof ResolveKeyRequest>;

export const KeyLimits = z.object({
  maxRequestBytes: z.number().int().positive(),
  /** The key's allowance for the maximum-output field; above it -> max_output_tokens_exceeded. */
  maxOutputTokens: z.number().int().positive(),
  requestsPerMinute: z.number().int().positive(),
  concurrency: z.number().int().positive(),
});
export type KeyLimits = z.infer<typeof KeyLimits>;

/** Ceilings of a package the account holds (an entitlement still usable). */
export const PlanCeilings = z.object({
  packageId: Id,
  /** Aliases the entitlement covers; null covers every alias. */
  aliases: z.array(Alias).nullable(),
  expiresAt: IsoTime.nullable(),
  maxOutputTokens: z.number().int().positive().nullable(),
  requestsPerMinute: z.number().int().positive().nullable(),
  concurrency: z.number().int().positive().nullable(),
});
export type PlanCeilings = z.infer<typeof PlanCeilings>;

export const ResolvedKey = z.object({
  keyId: Id,
  accountId: Id,
  state: KeyState,
  accountSuspended: z.boolean(),
  expiresAt: IsoTime.nullable(),
  scope: z.array(Alias).nullable(),
  limits: KeyLimits,
  /** Usable entitlements, soonest expiry first (the order reservations draw in). */
  plans: z.array(PlanCeilings),
});
export type ResolvedKey = z.infer<typeof ResolvedKey>;

export const Amounts = z.object({ tokens: QuantityString, credits: QuantityString });
export type Amounts = z.infer<typeof Amounts>;

/** A spend cap that bounds the key (docs/billing/spend-caps.md), with where it stands now. */
export const KeyCapStatus = z.object({
  id: z.string().uuid(),
  /** Null: a cap on the whole account, which every key shares. */
  keyId: z.string().uuid().nullable(),
  setBy: z.enum(['customer', 'reseller', 'admin']),
  unit: z.enum(['credits', 'tokens']),
  period: z.enum(['5h', 'day', 'week', 'month']),
  timeZone: z.string(),
  limit: QuantityString,
  used: QuantityString,
  remaining: QuantityString,
  windowStart: IsoTime,
  resetsAt: IsoTime.nullable(),
});
export type KeyCapStatus = z.infer<typeof KeyCapStatus>;

export const KeyStatus = z.object({
  keyId: Id,
  name: z.string(),
  state: KeyState,
  expiresAt: IsoTime.nullable(),
  scope: z.array(Alias).nullable(),
  limits: KeyLimits,
  /** Spendable now (reservations in flight already deducted). */
  remaining: Amounts,
  /** Held by requests in flight. */
  reserved: Amounts,
  /** Every spend cap on the key and on its account (absent from a control plane older than caps). */
  caps: z.array(KeyCapStatus).default([]),
});
export type KeyStatus = z.infer<typeof KeyStatus>;

// ---------------------------------------------------------------------------------------------
// Reservations.

/** What a call is expected to use, before it runs: input (a local count) and maximum output. */
export const Estimate = z.object({ inputTokens: QuantityString, outputTokens: QuantityString });
export type Estimate = z.infer<typeof Estimate>;

/**
 * What a call used, in the parts that are priced apart (docs/pricing.md). Every token is in
 * exactly one part: `inputTokens` is input neither read from nor written to a cache (OpenAI's
 * cached tokens are taken out of its prompt count; Anthropic reports cache tokens beside its
 * input), `outputTokens` includes reasoning. An absent part is zero.
 */
export const Usage = z.object({
  inputTokens: QuantityString,
  outputTokens: QuantityString,
  /** Input read from the provider's prompt cache. */
  cacheReadTokens: QuantityString.optional(),
  /** Input written to the cache for five minutes (Anthropic's default), or of a length not reported. */
  cacheWriteTokens: QuantityString.optional(),
  /** Input written to the cache for an hour (Anthropic's `ephemeral_1h_input_tokens`). */
  cacheWrite1hTokens: QuantityString.optional(),
});
export type Usage = z.infer<typeof Usage>;

/** The usage parts in the order a package's tokens cover them (docs/billing/rules.md R9). */
export const USAGE_PARTS = ['input', 'cacheWrite', 'cacheWrite1h', 'cacheRead', 'output'] as const;
export type UsagePart = (typeof USAGE_PARTS)[number];

/** The usage as bigint parts, an absent part zero. */
export function usageParts(usage: Usage): Record<UsagePart, bigint> {
  return {
    input: BigInt(usage.inputTokens),
    cacheWrite: BigInt(usage.cacheWriteTokens ?? '0'),
    cacheWrite1h: BigInt(usage.cacheWrite1hTokens ?? '0'),
    cacheRead: BigInt(usage.cacheReadTokens ?? '0'),
    output: BigInt(usage.outputTokens),
  };
}

/** Every input token of a usage, whichever part: what a package of raw tokens counts as input. */
export function totalInputTokens(usage: Usage): bigint {
  const parts = usageParts(usage);
  return parts.input + parts.cacheWrite + parts.cacheWrite1h + parts.cacheRead;
}

/**
 * The request-rate and concurrency ceilings of a call, when the gateway leaves their check to the
 * control plane (its hot tier checks them in the same step that reserves). The concurrency slot is
 * a lease named by the reservation id in the gateway's limiter keys; the control plane frees it
 * when the call finishes (RenewSlotsRequest keeps it while the call runs).
 */
export const ReserveLimits = z.object({
  keyRequestsPerMinute: z.number().int().positive(),
  keyConcurrency: z.number().int().positive(),
  /** The package the call draws from first (account + package), with its ceilings. */
  plan: z
    .object({
      id: z.string().min(1).max(200),
      requestsPerMinute: z.number().int().positive().nullable(),
      concurrency: z.number().int().positive().nullable(),
    })
    .nullable(),
});
export type ReserveLimits = z.infer<typeof ReserveLimits>;

export const ReserveItem = z.object({
  /** Chosen by the gateway (UUID); makes reserve, settle, release and hold idempotent. */
  reservationId: z.string().uuid(),
  keyDigest: KeyDigest,
  /** The key and account the gateway resolved the digest to; checked against the digest. */
  keyId: Id,
  accountId: Id,
  alias: Alias,
  surface: MeteredSurface,
  /** input = local count of the request's tokens; output = the clamped maximum output. */
  estimate: Estimate,
  limits: ReserveLimits.optional(),
  /**
   * The conversation's prompt-cache affinity record in the gateway's Redis (docs/routing.md), under
   * the account's hash tag: an engine that reserves in Redis reads and renews it in the same step
   * and answers `pinned`; any other leaves it to the gateway.
   */
  affinity: z.object({ record: z.string().min(1).max(500), ttlMs: z.number().int().positive() }).optional(),
});
export type ReserveItem = z.infer<typeof ReserveItem>;

/** Where the gateway's limiter keeps its counts (its Redis key prefix) and how. */
export const LimiterSettings = z.object({
  prefix: z.string().max(200),
  windowMs: z.number().int().positive(),
  leaseTtlMs: z.number().int().positive(),
});
export type LimiterSettings = z.infer<typeof LimiterSettings>;

/**
 * The calls whose concurrency slots the control plane took (ReserveResult `limited`) and whose
 * gateway still runs them: each slot's expiry is pushed `leaseTtlMs` ahead. A finished call's is
 * not taken back.
 */
export const RenewSlotsRequest = z.object({
  leaseTtlMs: z.number().int().positive(),
  items: z
    .array(z.object({ reservationId: z.string().uuid(), accountId: Id }))
    .min(1)
    .max(5000),
});
export type RenewSlotsRequest = z.infer<typeof RenewSlotsRequest>;

export const RenewSlotsResponse = z.object({ renewed: z.number().int().nonnegative() });
export type RenewSlotsResponse = z.infer<typeof RenewSlotsResponse>;

export const ReserveBatchRequest = z.object({
  items: z.array(ReserveItem).min(1).max(500),
  /** Present when items carry limits. */
  limiter: LimiterSettings.optional(),
});
export type ReserveBatchRequest = z.infer<typeof ReserveBatchRequest>;

export const ReserveRefusalCode = z.enum([
  'invalid_api_key',
  'api_key_disabled',
  'api_key_revoked',
  'api_key_expired',
  'account_suspended',
  'invalid_model',
  'model_not_allowed',
  'model_unavailable',
  'insufficient_tokens',
  'insufficient_credits',
  'rate_limit_exceeded',
  'concurrency_limit_exceeded',
  // Nothing was reserved: the limiter (Redis) or the database could not answer.
  'rate_limiter_unavailable',
  'billing_unavailable',
]);
export type ReserveRefusalCode = z.infer<typeof ReserveRefusalCode>;

/**
 * The tighter of a call's request budgets (the key's or its package's per-minute ceiling) after it
 * was counted: sent to clients as the x-ratelimit-* headers.
 */
export const RequestBudget = z.object({
  limit: z.number().int().positive(),
  remaining: z.number().int().nonnegative(),
  resetSeconds: z.number().int().nonnegative(),
});
export type RequestBudget = z.infer<typeof RequestBudget>;

/**
 * One leg of a reservation (docs/billing/rules.md R5): units of an entitlement at the tokens-to-units
 * rate of reservation time (1 for a package of raw tokens), or credits at the prices fixed then.
 */
export const ReservedLeg = z.discriminatedUnion('source', [
  z.object({ source: z.literal('entitlement'), amount: QuantityString, rate: QuantityString }),
  z.object({ source: z.literal('credit'), amount: QuantityString, price: AliasPrice }),
]);
export type ReservedLeg = z.infer<typeof ReservedLeg>;

export const ReserveResult = z.discriminatedUnion('ok', [
  z.object({
    ok: z.literal(true),
    reservationId: z.string().uuid(),
    keyId: Id,
    accountId: Id,
    /** Where the alias points at this instant. */
    providerId: Id,
    upstreamModel: z.string().min(1),
    reserved: Amounts,
    /**
     * The legs in draw order, when the engine tells them (the hot tier does): with them the gateway
     * knows what a settle within the reservation charges (chargeWithinLegs) without waiting for it.
     */
    legs: z.array(ReservedLeg).optional(),
    /**
     * The item's limits were checked and its concurrency slot taken, to be freed by the call's
     * finish (false: not checked here; the gateway checks them and owns the slot).
     */
    limited: z.boolean(),
    /** When `limited`: the request budget left. */
    budget: RequestBudget.optional(),
    /**
     * When the engine read the item's affinity record: the upstream it names (null: none). Absent:
     * not read here.
     */
    pinned: z.string().min(1).max(500).nullable().optional(),
  }),
  z.object({
    ok: z.literal(false),
    reservationId: z.string().uuid(),
    code: ReserveRefusalCode,
    message: z.string(),
    retryAfterSeconds: z.number().int().positive().optional(),
    /** On rate_limit_exceeded checked here: the exhausted budget. */
    budget: RequestBudget.optional(),
  }),
]);
export type ReserveResult = z.infer<typeof ReserveResult>;

export const ReserveBatchResponse = z.object({ results: z.array(ReserveResult) });
export type ReserveBatchResponse = z.infer<typeof ReserveBatchResponse>;

/** Why a reservation was released or held; recorded as the activity outcome. */
export const FinishOutcome = z.enum([
  'ok',
  'upstream_rejected',
  'upstream_unavailable',
  'upstream_invalid_response',
  'billing_settlement_pending',
  'client_disconnected',
  'rate_limited',
  'gateway_error',
]);
export type FinishOutcome = z.infer<typeof FinishOutcome>;

const FinishContext = {
  reservationId: z.string().uuid(),
  /** Repeated so a settle still charges correctly if the reservation row was lost. */
  keyId: Id,
  accountId: Id,
  alias: Alias,
  surface: MeteredSurface,
  /** HTTP status the client saw (499 for a disconnect). */
  httpStatus: z.number().int().min(100).max(599),
  occurredAt: IsoTime,
  /** The upstream that answered (or was tried last) and how many were tried; admins only. */
  route: z
    .object({
      providerId: Id,
      upstreamModel: z.string().min(1).max(256),
      attempts: z.number().int().min(1).max(100),
    })
    .optional(),
};

export const FinishItem = z.discriminatedUnion('action', [
  z.object({ action: z.literal('settle'), ...FinishContext, usage: Usage, outcome: FinishOutcome }),
  z.object({ action: z.literal('release'), ...FinishContext, outcome: FinishOutcome }),
  z.object({ action: z.literal('hold'), ...FinishContext, outcome: FinishOutcome }),
]);
export type FinishItem = z.infer<typeof FinishItem>;

export const FinishBatchRequest = z.object({ items: z.array(FinishItem).min(1).max(1000) });
export type FinishBatchRequest = z.infer<typeof FinishBatchRequest>;

export const FinishResult = z.object({
  reservationId: z.string().uuid(),
  status: z.enum(['settled', 'released', 'held']),
  /** True when this call changed nothing because an earlier one already finished it. */
  replay: z.boolean(),
  charged: Amounts,
  writtenOff: Amounts,
});
export type FinishResult = z.infer<typeof FinishResult>;

export const FinishBatchResponse = z.object({ results: z.array(FinishResult) });
export type FinishBatchResponse = z.infer<typeof FinishBatchResponse>;

// ---------------------------------------------------------------------------------------------
// Receipts: one call as its key reads it (GET /v1/key/usage/{request_id}; docs/receipts.md).
//   POST /internal/v1/keys/receipt           ReceiptRequest -> CallReceipt

export const ReceiptRequest = z.object({ keyDigest: KeyDigest, requestId: z.string().uuid() });
export type ReceiptRequest = z.infer<typeof ReceiptRequest>;

/** One source a call was charged from: an entitlement (tokens) or the credit balance (credits). */
export const ReceiptDraw = z.object({
  source: z.enum(['entitlement', 'credit']),
  entitlementId: z.string().nullable(),
  packageId: z.string().nullable(),
  /** Tokens for an entitlement, credits for the credit balance. */
  amount: QuantityString,
});
export type ReceiptDraw = z.infer<typeof ReceiptDraw>;

export const CallReceipt = z.object({
  requestId: z.string().uuid(),
  keyId: Id,
  alias: Alias,
  surface: MeteredSurface,
  state: z.enum(['reserved', 'settled', 'released', 'held']),
  outcome: z.string().nullable(),
  httpStatus: z.number().int().nullable(),
  holdReason: z.string().nullable(),
  /** The token parts settled (e.g. inputTokens, outputTokens); null until settled. */
  usage: z.record(z.string(), QuantityString).nullable(),
  /** Credit prices per token fixed when the call was reserved; null when no credit was reserved. */
  prices: z.record(z.string(), QuantityString).nullable(),
  charged: Amounts,
  writtenOff: Amounts,
  /** What the charge was drawn from, as the ledger's settle rows record it. */
  drawn: z.array(ReceiptDraw),
  createdAt: IsoTime,
  finishedAt: IsoTime.nullable(),
});
export type CallReceipt = z.infer<typeof CallReceipt>;

// ---------------------------------------------------------------------------------------------
// Invalidation events published on Redis so gateway caches drop stale entries at once.

export const InvalidationEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('key.changed'), keyId: Id }),
  z.object({ type: z.literal('account.changed'), accountId: Id }),
  z.object({ type: z.literal('catalog.changed') }),
]);
export type InvalidationEvent = z.infer<typeof InvalidationEvent>;

/** Redis channel (after the deployment's key prefix) that carries InvalidationEvent JSON. */
export const INVALIDATION_CHANNEL = 'invalidations';

/** Service-token claims: HS256, short-lived, signed by the gateway, checked by the control plane. */
export const SERVICE_TOKEN_ISSUER = 'tollgate-gateway';
export const SERVICE_TOKEN_AUDIENCE = 'tollgate-control-plane-internal';
