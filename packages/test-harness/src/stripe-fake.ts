/**
 * A small local stand-in for the Stripe API (the part Tollgate uses: Checkout Sessions, their
 * expiry, refunds, and PaymentIntents charged to a card kept by a Checkout payment), for tests. The official `stripe` client talks to it through host/port/protocol.
 * Tests drive it: `pay` marks a session paid (optionally with another amount or currency, to
 * test mismatches), `expire` ends one, `eventFor` builds the event Stripe would send.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeCheckoutSession {
  id: string;
  object: 'checkout.session';
  url: string;
  mode: 'payment';
  status: 'open' | 'complete' | 'expired';
  payment_status: 'unpaid' | 'paid';
  amount_total: number;
  currency: string;
  client_reference_id: string | null;
  metadata: Record<string, string>;
  payment_intent: string | null;
  /** Set when the session keeps the card (setup_future_usage): the customer the card is kept on. */
  customer: string | null;
  setup_future_usage: string | null;
  success_url: string | null;
  cancel_url: string | null;
  created: number;
}

/** A PaymentIntent: a Checkout payment's, or one charged to a saved card (off_session). */
export interface FakePaymentIntent {
  id: string;
  object: 'payment_intent';
  amount: number;
  currency: string;
  customer: string | null;
  payment_method: string | null;
  off_session: boolean;
  status: 'succeeded' | 'requires_payment_method' | 'processing';
  metadata: Record<string, string>;
  created: number;
}

export interface FakeRefund {
  id: string;
  object: 'refund';
  payment_intent: string;
  amount: number;
  status: 'succeeded';
}

export interface StripeFake {
  url: string;
  secretKey: string;
  sessions: Map<string, FakeCheckoutSession>;
  refunds: FakeRefund[];
  /** Every PaymentIntent, by id: Checkout payments' and those created by the API (charges). */
  paymentIntents: Map<string, FakePaymentIntent>;
  /** PaymentIntents created through POST /v1/payment_intents (charges of a saved card), in order. */
  charges: FakePaymentIntent[];
  /** While true, charging a saved card is declined (status requires_payment_method). */
  declineCharges: boolean;
  /** Requests received, by "METHOD path". */
  calls: string[];
  /** While true, expiring a session answers 500 (Stripe unreachable or failing). */
  failExpire: boolean;
  pay(sessionId: string, override?: { amount?: number; currency?: string }): FakeCheckoutSession;
  expire(sessionId: string): FakeCheckoutSession;
  /** The event object Stripe would deliver for this session (serialise it and sign it). */
  eventFor(type: string, session: FakeCheckoutSession, createdSeconds?: number): Record<string, unknown>;
  /** A payment_intent.* event about a PaymentIntent (a charge of a saved card). */
  paymentIntentEventFor(type: string, intent: FakePaymentIntent): Record<string, unknown>;
  /** A charge.* event about the paid session's charge: a refund (full or partial) or a dispute. */
  chargeEventFor(
    type: 'charge.refunded' | 'charge.dispute.created' | 'charge.dispute.closed',
    session: FakeCheckoutSession,
    options?: { amountRefunded?: number },
  ): Record<string, unknown>;
  close(): Promise<void>;
}

const id = (prefix: string) => `${prefix}_test_${randomBytes(12).toString('hex')}`;

async function formOf(request: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function send(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json', 'request-id': id('req') });
  response.end(JSON.stringify(body));
}

export async function startStripeFake(): Promise<StripeFake> {
  const secretKey = `sk_test_${randomBytes(16).toString('hex')}`;
  const sessions = new Map<string, FakeCheckoutSession>();
  const refunds: FakeRefund[] = [];
  const paymentIntents = new Map<string, FakePaymentIntent>();
  const charges: FakePaymentIntent[] = [];
  const calls: string[] = [];
  // The object handed to the test; the server reads its switches (failExpire) per request.
  const fake = { failExpire: false, declineCharges: false } as StripeFake;
  // Stripe replays the first answer for a repeated Idempotency-Key.
  const idempotent = new Map<string, unknown>();

  const server: Server = createServer(async (request, response) => {
    const path = (request.url ?? '').split('?')[0] ?? '';
    calls.push(`${request.method} ${path}`);
    if (request.headers.authorization !== `Bearer ${secretKey}`) {
      return send(response, 401, {
        error: { type: 'invalid_request_error', message: 'Invalid API Key provided' },
      });
    }
    const key = request.headers['idempotency-key'];
    if (request.method === 'POST' && typeof key === 'string' && idempotent.has(`${path} ${key}`)) {
      return send(response, 200, idempotent.get(`${path} ${key}`));
    }
    const remember = (body: unknown) => {
      if (request.method === 'POST' && typeof key === 'string') idempotent.set(`${path} ${key}`, body);
      send(response, 200, body);
    };

    if (request.method === 'POST' && path === '/v1/checkout/sessions') {
      const form = await formOf(request);
      const sessionId = id('cs');
      const metadata: Record<string, string> = {};
      for (const [name, value] of form) {
        const match = /^metadata\[(.+)\]$/.exec(name);
        if (match?.[1]) metadata[match[1]] = value;
      }
      const session: FakeCheckoutSession = {
        id: sessionId,
        object: 'checkout.session',
        url: `https://checkout.stripe.test/c/pay/${sessionId}`,
        mode: 'payment',
        status: 'open',
        payment_status: 'unpaid',
        amount_total: Number(form.get('line_items[0][price_data][unit_amount]') ?? 0),
        currency: form.get('line_items[0][price_data][currency]') ?? '',
        client_reference_id: form.get('client_reference_id'),
        metadata,
        payment_intent: null,
        customer: null,
        setup_future_usage: form.get('payment_intent_data[setup_future_usage]'),
        success_url: form.get('success_url'),
        cancel_url: form.get('cancel_url'),
        created: Math.floor(Date.now() / 1000),
      };
      sessions.set(sessionId, session);
      return remember(session);
    }
    if (request.method === 'GET' && path === '/v1/checkout/sessions') {
      // The list filtered by payment_intent: how a charge's event finds its session.
      const intent = new URL(request.url ?? '', 'http://fake').searchParams.get('payment_intent');
      const data = [...sessions.values()].filter((candidate) => candidate.payment_intent === intent);
      return send(response, 200, { object: 'list', data, has_more: false, url: '/v1/checkout/sessions' });
    }
    const expireMatch = /^\/v1\/checkout\/sessions\/([^/]+)\/expire$/.exec(path);
    if (request.method === 'POST' && expireMatch?.[1]) {
      if (fake.failExpire) {
        return send(response, 500, { error: { type: 'api_error', message: 'Something went wrong' } });
      }
      const session = sessions.get(expireMatch[1]);
      // Stripe expires only an open session; a paid or expired one is refused.
      if (session?.status !== 'open') {
        return send(response, 400, {
          error: {
            type: 'invalid_request_error',
            message: 'Only Checkout Sessions with a status in ["open"] can be expired.',
          },
        });
      }
      session.status = 'expired';
      return send(response, 200, session);
    }
    const sessionMatch = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(path);
    if (request.method === 'GET' && sessionMatch?.[1]) {
      const session = sessions.get(sessionMatch[1]);
      if (!session) {
        return send(response, 404, {
          error: { type: 'invalid_request_error', message: 'No such checkout.session' },
        });
      }
      // The official client sends expand[0]=payment_intent.
      const expand = [...new URL(request.url ?? '', 'http://fake').searchParams]
        .filter(([name]) => name.startsWith('expand'))
        .map(([, value]) => value);
      if (expand.includes('payment_intent') && session.payment_intent) {
        return send(response, 200, {
          ...session,
          payment_intent: paymentIntents.get(session.payment_intent),
        });
      }
      return send(response, 200, session);
    }
    if (request.method === 'POST' && path === '/v1/payment_intents') {
      const form = await formOf(request);
      const metadata: Record<string, string> = {};
      for (const [name, value] of form) {
        const match = /^metadata\[(.+)\]$/.exec(name);
        if (match?.[1]) metadata[match[1]] = value;
      }
      const known = [...paymentIntents.values()].some(
        (candidate) =>
          candidate.payment_method === form.get('payment_method') &&
          candidate.customer === form.get('customer'),
      );
      if (!known) {
        return send(response, 400, {
          error: { type: 'invalid_request_error', message: 'No such PaymentMethod for this customer' },
        });
      }
      const intent: FakePaymentIntent = {
        id: id('pi'),
        object: 'payment_intent',
        amount: Number(form.get('amount') ?? 0),
        currency: form.get('currency') ?? '',
        customer: form.get('customer'),
        payment_method: form.get('payment_method'),
        off_session: form.get('off_session') === 'true',
        status: fake.declineCharges ? 'requires_payment_method' : 'succeeded',
        metadata,
        created: Math.floor(Date.now() / 1000),
      };
      paymentIntents.set(intent.id, intent);
      charges.push(intent);
      if (fake.declineCharges) {
        // Stripe answers a declined off-session confirmation with a card error naming the intent.
        const body = {
          error: {
            type: 'card_error',
            code: 'card_declined',
            message: 'Your card was declined.',
            payment_intent: intent,
          },
        };
        if (typeof key === 'string') idempotent.set(`${path} ${key}`, body);
        return send(response, 402, body);
      }
      return remember(intent);
    }
    const intentMatch = /^\/v1\/payment_intents\/([^/]+)$/.exec(path);
    if (request.method === 'GET' && intentMatch?.[1]) {
      const intent = paymentIntents.get(intentMatch[1]);
      if (!intent) {
        return send(response, 404, {
          error: { type: 'invalid_request_error', message: 'No such payment_intent' },
        });
      }
      return send(response, 200, intent);
    }
    if (request.method === 'POST' && path === '/v1/refunds') {
      const form = await formOf(request);
      const intent = form.get('payment_intent') ?? '';
      const session =
        [...sessions.values()].find((candidate) => candidate.payment_intent === intent) ??
        paymentIntents.get(intent);
      if (!session) {
        return send(response, 400, {
          error: { type: 'invalid_request_error', message: 'No such payment_intent' },
        });
      }
      const refund: FakeRefund = {
        id: id('re'),
        object: 'refund',
        payment_intent: intent,
        amount: 'amount_total' in session ? session.amount_total : session.amount,
        status: 'succeeded',
      };
      refunds.push(refund);
      return remember(refund);
    }
    send(response, 404, { error: { type: 'invalid_request_error', message: 'Unrecognized request URL' } });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  function session(sessionId: string): FakeCheckoutSession {
    const found = sessions.get(sessionId);
    if (!found) throw new Error(`no fake session ${sessionId}`);
    return found;
  }

  Object.assign(fake, {
    url: `http://127.0.0.1:${port}`,
    secretKey,
    sessions,
    refunds,
    paymentIntents,
    charges,
    calls,
    pay(sessionId, override = {}) {
      const paid = session(sessionId);
      paid.status = 'complete';
      paid.payment_status = 'paid';
      paid.payment_intent = id('pi');
      const saved = paid.setup_future_usage !== null;
      if (saved) paid.customer = id('cus');
      paymentIntents.set(paid.payment_intent, {
        id: paid.payment_intent,
        object: 'payment_intent',
        amount: override.amount ?? paid.amount_total,
        currency: override.currency ?? paid.currency,
        customer: paid.customer,
        payment_method: id('pm'),
        off_session: false,
        status: 'succeeded',
        metadata: {},
        created: Math.floor(Date.now() / 1000),
      });
      if (override.amount !== undefined) paid.amount_total = override.amount;
      if (override.currency !== undefined) paid.currency = override.currency;
      return paid;
    },
    expire(sessionId) {
      const expired = session(sessionId);
      expired.status = 'expired';
      return expired;
    },
    eventFor(type, eventSession, createdSeconds = Math.floor(Date.now() / 1000)) {
      return {
        id: id('evt'),
        object: 'event',
        api_version: '2025-01-01',
        created: createdSeconds,
        livemode: false,
        type,
        data: { object: { ...eventSession } },
      };
    },
    paymentIntentEventFor(type, intent) {
      return {
        id: id('evt'),
        object: 'event',
        api_version: '2025-01-01',
        created: Math.floor(Date.now() / 1000),
        livemode: false,
        type,
        data: { object: { ...intent } },
      };
    },
    chargeEventFor(type, paidSession, options = {}) {
      const charge = `ch_${(paidSession.payment_intent ?? '').slice(3)}`;
      const amountRefunded = options.amountRefunded ?? paidSession.amount_total;
      const object =
        type === 'charge.refunded'
          ? {
              id: charge,
              object: 'charge',
              payment_intent: paidSession.payment_intent,
              amount: paidSession.amount_total,
              amount_refunded: amountRefunded,
              refunded: amountRefunded >= paidSession.amount_total,
              currency: paidSession.currency,
            }
          : {
              id: id('dp'),
              object: 'dispute',
              charge,
              payment_intent: paidSession.payment_intent,
              amount: paidSession.amount_total,
              currency: paidSession.currency,
              reason: 'fraudulent',
              status: type === 'charge.dispute.closed' ? 'lost' : 'needs_response',
            };
      return {
        id: id('evt'),
        object: 'event',
        api_version: '2025-01-01',
        created: Math.floor(Date.now() / 1000),
        livemode: false,
        type,
        data: { object },
      };
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  } satisfies Omit<StripeFake, 'failExpire' | 'declineCharges'>);
  return fake;
}
