import Stripe from 'stripe';
import type {
  PaymentCheck,
  PaymentNotification,
  PaymentProvider,
  PaymentReversal,
} from './payment-provider.ts';

export interface StripeSettings {
  secretKey: string | undefined;
  webhookSecret: string | undefined;
  /** Another API address (a local fake in tests); the official client takes host/port/protocol. */
  apiUrl: string | undefined;
}

/** Charge events that take a paid order's money back (or close a dispute about it). */
const CHARGE_EVENTS = new Set(['charge.refunded', 'charge.dispute.created', 'charge.dispute.closed']);

/** PaymentIntent events: how a charge of a saved card (an automatic top-up) is confirmed. */
const INTENT_EVENTS = new Set(['payment_intent.succeeded', 'payment_intent.payment_failed']);
/** The metadata kind of a PaymentIntent charged for an automatic top-up. */
const AUTO_TOP_UP = 'tollgate_auto_top_up';

const isIntent = (id: string) => id.startsWith('pi_');

/** Signed events older than this are refused as replays (Stripe's own default tolerance). */
const WEBHOOK_TOLERANCE_SECONDS = 300;

/** Stripe Checkout: one Checkout Session per order, verified by retrieving it, signed webhooks. */
export function createStripeProvider(settings: StripeSettings): PaymentProvider {
  const address = settings.apiUrl ? new URL(settings.apiUrl) : null;
  const stripe = new Stripe(settings.secretKey ?? '', {
    maxNetworkRetries: 1,
    timeout: 10_000,
    ...(address
      ? {
          host: address.hostname,
          port: address.port || (address.protocol === 'https:' ? 443 : 80),
          protocol: address.protocol === 'https:' ? 'https' : 'http',
        }
      : {}),
  });

  /**
   * A refund made in Stripe's dashboard or a dispute names the charge's payment intent; the
   * Checkout Session (our payment) is found by it.
   */
  async function readChargeEvent(event: Stripe.Event): Promise<PaymentNotification> {
    const object = event.data.object as Stripe.Charge | Stripe.Dispute;
    const intent =
      typeof object.payment_intent === 'string' ? object.payment_intent : (object.payment_intent?.id ?? null);
    const session = intent
      ? (await stripe.checkout.sessions.list({ payment_intent: intent, limit: 1 })).data[0]
      : undefined;
    let reversal: PaymentReversal;
    if (event.type === 'charge.refunded') {
      const charge = object as Stripe.Charge;
      reversal = {
        kind: charge.refunded ? 'refund' : 'partial_refund',
        reference: charge.id,
        detail: `${charge.amount_refunded} of ${charge.amount} ${charge.currency.toUpperCase()} refunded`,
      };
    } else {
      const dispute = object as Stripe.Dispute;
      reversal = {
        kind: event.type === 'charge.dispute.created' ? 'dispute_opened' : 'dispute_closed',
        reference: dispute.id,
        detail: event.type === 'charge.dispute.created' ? dispute.reason : dispute.status,
      };
    }
    return {
      eventId: event.id,
      type: event.type,
      orderId: session?.client_reference_id ?? null,
      providerPaymentId: session?.id ?? null,
      check: null,
      reversal,
    };
  }

  return {
    id: 'stripe',
    nextStep: 'redirect',
    async start(subject) {
      const session = await stripe.checkout.sessions.create(
        {
          mode: 'payment',
          client_reference_id: subject.orderId,
          metadata: { order_id: subject.orderId, reference: subject.reference },
          line_items: [
            {
              quantity: 1,
              price_data: {
                currency: subject.currency.toLowerCase(),
                unit_amount: Number(subject.amount),
                product_data: { name: subject.description },
              },
            },
          ],
          ...(subject.savePaymentMethod
            ? {
                customer_creation: 'always' as const,
                payment_intent_data: { setup_future_usage: 'off_session' as const },
              }
            : {}),
          success_url: `${subject.returnUrl}?payment=done`,
          cancel_url: `${subject.returnUrl}?payment=cancelled`,
        },
        // A retried start never opens a second session for the same order.
        { idempotencyKey: `order-${subject.orderId}` },
      );
      return { providerPaymentId: session.id, redirectUrl: session.url };
    },
    async check(payment) {
      if (!payment.providerPaymentId) return { state: 'pending' };
      if (isIntent(payment.providerPaymentId))
        return intentCheckOf(await stripe.paymentIntents.retrieve(payment.providerPaymentId));
      return checkOf(await stripe.checkout.sessions.retrieve(payment.providerPaymentId));
    },
    async savedMethod(payment) {
      if (!payment.providerPaymentId || isIntent(payment.providerPaymentId)) return null;
      const session = await stripe.checkout.sessions.retrieve(payment.providerPaymentId, {
        expand: ['payment_intent'],
      });
      const intent = session.payment_intent;
      const customer = typeof session.customer === 'string' ? session.customer : session.customer?.id;
      if (!intent || typeof intent === 'string' || !customer) return null;
      const method =
        typeof intent.payment_method === 'string' ? intent.payment_method : intent.payment_method?.id;
      return method ? { customer, paymentMethod: method } : null;
    },
    async chargeSaved(charge) {
      try {
        const intent = await stripe.paymentIntents.create(
          {
            amount: Number(charge.amount),
            currency: charge.currency.toLowerCase(),
            customer: charge.method.customer,
            payment_method: charge.method.paymentMethod,
            off_session: true,
            confirm: true,
            description: charge.description,
            metadata: { order_id: charge.orderId, kind: AUTO_TOP_UP },
          },
          // One crossing, one order, one charge: a retried charge is the same PaymentIntent.
          { idempotencyKey: `charge-${charge.orderId}` },
        );
        return { providerPaymentId: intent.id, check: intentCheckOf(intent) };
      } catch (error) {
        // A declined card (authentication required, insufficient funds): the intent is named in
        // the error; the order fails. Anything else (Stripe unreachable) is thrown.
        if (!(error instanceof Stripe.errors.StripeCardError)) throw error;
        const intent = (error.raw as { payment_intent?: { id?: string } }).payment_intent;
        return {
          providerPaymentId: intent?.id ?? null,
          check: { state: 'failed', reason: error.code ?? 'card_declined' },
        };
      }
    },
    async expire(payment) {
      if (!payment.providerPaymentId) return { state: 'failed', reason: 'expired' };
      try {
        return checkOf(await stripe.checkout.sessions.expire(payment.providerPaymentId));
      } catch (error) {
        // Stripe expires only an open session: one paid or ended first is read as it is.
        if (!(error instanceof Stripe.errors.StripeInvalidRequestError)) throw error;
        return checkOf(await stripe.checkout.sessions.retrieve(payment.providerPaymentId));
      }
    },
    async refund(payment) {
      if (!payment.providerPaymentId) throw new Error('no Stripe session to refund');
      if (isIntent(payment.providerPaymentId)) {
        const refund = await stripe.refunds.create(
          { payment_intent: payment.providerPaymentId },
          { idempotencyKey: `refund-${payment.orderId}` },
        );
        return { reference: refund.id };
      }
      const session = await stripe.checkout.sessions.retrieve(payment.providerPaymentId);
      const intent =
        typeof session.payment_intent === 'string' ? session.payment_intent : session.payment_intent?.id;
      if (!intent) throw new Error('the Stripe session has no payment to refund');
      const refund = await stripe.refunds.create(
        { payment_intent: intent },
        { idempotencyKey: `refund-${payment.orderId}` },
      );
      return { reference: refund.id };
    },
    async readNotification(rawBody, signature) {
      const event = stripe.webhooks.constructEvent(
        rawBody,
        signature ?? '',
        settings.webhookSecret ?? '',
        WEBHOOK_TOLERANCE_SECONDS,
      );
      if (CHARGE_EVENTS.has(event.type)) return readChargeEvent(event);
      if (INTENT_EVENTS.has(event.type)) {
        const intent = event.data.object as Stripe.PaymentIntent;
        // Only the charges of saved cards are ours; a Checkout payment's intent is read by its session.
        if (intent.metadata?.kind !== AUTO_TOP_UP)
          return { eventId: event.id, type: event.type, orderId: null, providerPaymentId: null, check: null };
        return {
          eventId: event.id,
          type: event.type,
          orderId: intent.metadata.order_id ?? null,
          providerPaymentId: intent.id,
          check: intentCheckOf(intent),
        };
      }
      if (!event.type.startsWith('checkout.session.')) {
        return { eventId: event.id, type: event.type, orderId: null, providerPaymentId: null, check: null };
      }
      const session = event.data.object as Stripe.Checkout.Session;
      const check: PaymentCheck | null =
        event.type === 'checkout.session.expired'
          ? { state: 'failed', reason: 'expired' }
          : event.type === 'checkout.session.async_payment_failed'
            ? { state: 'failed', reason: 'payment_failed' }
            : checkOf(session);
      return {
        eventId: event.id,
        type: event.type,
        orderId: session.client_reference_id ?? session.metadata?.order_id ?? null,
        providerPaymentId: session.id,
        check,
      };
    },
  };
}

function intentCheckOf(intent: Stripe.PaymentIntent): PaymentCheck {
  if (intent.status === 'succeeded')
    return { state: 'succeeded', amount: BigInt(intent.amount), currency: intent.currency.toUpperCase() };
  if (intent.status === 'canceled' || intent.status === 'requires_payment_method')
    return { state: 'failed', reason: 'payment_failed' };
  return { state: 'pending' };
}

function checkOf(session: Stripe.Checkout.Session): PaymentCheck {
  if (session.payment_status === 'paid') {
    return {
      state: 'succeeded',
      amount: BigInt(session.amount_total ?? -1),
      currency: (session.currency ?? '').toUpperCase(),
    };
  }
  if (session.status === 'expired') return { state: 'failed', reason: 'expired' };
  return { state: 'pending' };
}
