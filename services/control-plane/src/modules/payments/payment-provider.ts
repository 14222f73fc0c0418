import type { PaymentProviderId } from '../../config.ts';

/** What a provider is asked to collect: the order's fixed price. */
export interface PaymentSubject {
  orderId: string;
  reference: string;
  description: string;
  amount: bigint;
  currency: string;
  exponent: number;
  /** Where the provider sends the customer back (Stripe Checkout). */
  returnUrl: string;
  /** Keep the card for automatic top-ups (Stripe Checkout: setup_future_usage off_session). */
  savePaymentMethod?: boolean;
}

/** A card kept at the provider for charges without the customer (automatic top-ups). */
export interface SavedPaymentMethod {
  customer: string;
  paymentMethod: string;
}

/** A charge of a saved card for one order (an automatic top-up). */
export interface CardCharge {
  orderId: string;
  method: SavedPaymentMethod;
  amount: bigint;
  currency: string;
  description: string;
}

export interface StartedPayment {
  providerPaymentId: string | null;
  redirectUrl: string | null;
}

/** The provider's word on a payment. Amount and currency are compared with the order's. */
export type PaymentCheck =
  | { state: 'pending' }
  | { state: 'succeeded'; amount: bigint; currency: string }
  | { state: 'failed'; reason: string };

export interface RecordedPayment {
  orderId: string;
  providerPaymentId: string | null;
  amount: bigint;
  currency: string;
}

/** A signed notification from the provider, verified. */
export interface PaymentNotification {
  eventId: string;
  type: string;
  orderId: string | null;
  providerPaymentId: string | null;
  /** null: an event type that says nothing about a payment's outcome. */
  check: PaymentCheck | null;
  /** Money of a paid order taken back at the provider: refunded there, or disputed by the payer. */
  reversal?: PaymentReversal;
}

export interface PaymentReversal {
  kind: 'refund' | 'partial_refund' | 'dispute_opened' | 'dispute_closed';
  /** The provider's id of the refunded charge or of the dispute. */
  reference: string;
  /** Dispute outcome or reason, as the provider says it (for the admins' report). */
  detail: string | null;
}

/**
 * One payment provider: transport to it and the reading of its answers, nothing else. The order
 * rules (exactly-once grant, amount check, states) live in the orders service.
 */
export interface PaymentProvider {
  readonly id: PaymentProviderId;
  /** What the client does after starting: follow redirectUrl, call verify, or wait for an admin. */
  readonly nextStep: 'redirect' | 'verify' | 'wait';
  start(subject: PaymentSubject): Promise<StartedPayment>;
  check(payment: RecordedPayment): Promise<PaymentCheck>;
  refund(payment: RecordedPayment): Promise<{ reference: string }>;
  /**
   * Ends a payment the customer makes at the provider (a Stripe Checkout Session) so it can no
   * longer be made, and says what became of it: failed (ended now or before), succeeded (paid
   * first) or pending (a payment in progress that cannot be ended). Throws when the provider
   * could not be asked. Providers without it have nothing the customer could still pay.
   */
  expire?(payment: RecordedPayment): Promise<PaymentCheck>;
  /** The card a paid payment kept (savePaymentMethod), or null. Stripe only. */
  savedMethod?(payment: RecordedPayment): Promise<SavedPaymentMethod | null>;
  /**
   * Charges a saved card once per order (the provider's idempotency key is the order's), without
   * the customer present. Throws when the provider could not be asked.
   */
  chargeSaved?(charge: CardCharge): Promise<{ providerPaymentId: string | null; check: PaymentCheck }>;
  /** Verifies and reads a webhook; throws when the signature does not hold. */
  readNotification?(rawBody: string, signature: string | undefined): Promise<PaymentNotification>;
}

export type PaymentProviders = Map<PaymentProviderId, PaymentProvider>;
