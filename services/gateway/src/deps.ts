import type {
  CallReceipt,
  FinishItem,
  FinishResult,
  KeyStatus,
  ReserveItem,
  ReserveResult,
} from '@tollgate/schemas';
import type { Logger, Tracing } from '@tollgate/service-kit';
import type { CatalogCache } from './catalog/catalog-cache.ts';
import type { GatewayConfig } from './config.ts';
import type { KeyCache } from './keys/key-cache.ts';
import type { UnknownKeyGuard } from './keys/unknown-keys.ts';
import type { Lease, Limiter } from './limiter/limiter.ts';
import type { GatewayMetrics } from './metrics/metrics.ts';
import type { AffinityStore } from './routing/affinity-store.ts';
import type { Breakers } from './routing/breakers.ts';
import type { Cooldowns } from './routing/cooldowns.ts';
import type { CredentialPools } from './routing/credential-pool.ts';
import type { TokenCounter } from './tokens/token-counter.ts';
import type { CredentialStore, UpstreamClient } from './upstream/index.ts';

/** What the gateway asks of the control plane (batched and queued behind this interface). */
export interface BillingPort {
  reserve(item: ReserveItem): Promise<ReserveResult>;
  /**
   * Queues a settle/release/hold; it leaves the response path and is retried until it lands.
   * `onResult` is told what the control plane answered for it (a receipt's charge), or null if it
   * left this gateway's queue unanswered; it leaves promptly rather than after the flush interval.
   */
  finish(item: FinishItem, onResult?: (result: FinishResult | null) => void): void;
  /**
   * Sends this account's queued finishes now; true once the control plane has them all, false
   * when there were none or the deadline passed.
   */
  settledFor(accountId: string, deadlineMs: number): Promise<boolean>;
  keyStatus(keyDigest: string): Promise<KeyStatus>;
  /** One call's receipt for the key that made it; not_found for any other. */
  receipt(keyDigest: string, requestId: string): Promise<CallReceipt>;
  /**
   * The handle of the concurrency slot the control plane took with a reservation (its result
   * `limited`): kept while the call runs; its release stops that, the call's finish frees the slot.
   */
  holdSlot(reservationId: string, accountId: string): Lease;
}

/** Everything the gateway's routes use, built once in server.ts (or a test) and injected. */
export interface GatewayDependencies {
  config: GatewayConfig;
  logger: Logger;
  limiter: Limiter;
  billing: BillingPort;
  keys: KeyCache;
  /** Unrecognised keys: answered from memory, and throttled per client address. */
  unknownKeys: UnknownKeyGuard;
  catalog: CatalogCache;
  /** Upstreams that failed lately, tried last (routing/). */
  cooldowns: Cooldowns;
  /** Which upstream served each conversation's last turn (routing/, prompt-cache affinity). */
  affinity: AffinityStore;
  /** Each provider's credentials in turn, refused ones out of rotation (routing/). */
  credentialPools: CredentialPools;
  /** Each upstream's circuit breaker, shared through Redis when there is one (routing/). */
  breakers: Breakers;
  /** Parses and counts count_tokens bodies off the event loop. */
  tokens: TokenCounter;
  credentials: CredentialStore;
  upstream: UpstreamClient;
  /** Prometheus metrics, when METRICS_PORT is set. */
  metrics?: GatewayMetrics;
  /** W3C trace context of each request (exported when OTEL_EXPORTER_OTLP_ENDPOINT is set). */
  tracing?: Tracing;
}
