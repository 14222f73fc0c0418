/**
 * A small local stand-in for the Stripe API (the part Tollgate uses: Checkout Sessions, their
 * expiry, and refunds), for tests. The official `stripe` client talks to it through host/port/protocol.
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
  success_url: string | null;
  cancel_url: string | null;
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
  /** Requests received, by "METHOD path". */
  calls: string[];
  /** While true, expiring a session answers 500 (Stripe unreachable or failing). */
  failExpire: boolean;
  pay(sessionId: string, override?: { amount?: number; currency?: string }): FakeCheckoutSession;
  expire(sessionId: string): FakeCheckoutSession;
  /** The event object Stripe would deliver for this session (serialise it and sign it). */
  eventFor(type: string, session: FakeCheckoutSession, createdSeconds?: number): Record<string, unknown>;
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
  const calls: string[] = [];
  // The object handed to the test; the server reads its switches (failExpire) per request.
  const fake = { failExpire: false } as StripeFake;
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
      return send(response, 200, session);
    }
    if (request.method === 'POST' && path === '/v1/refunds') {
      const form = await formOf(request);
      const intent = form.get('payment_intent') ?? '';
      const session = [...sessions.values()].find((candidate) => candidate.payment_intent === intent);
      if (!session) {
        return send(response, 400, {
          error: { type: 'invalid_request_error', message: 'No such payment_intent' },
        });
      }
      const refund: FakeRefund = {
        id: id('re'),
        object: 'refund',
        payment_intent: intent,
        amount: session.amount_total,
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
    calls,
    pay(sessionId, override = {}) {
      const paid = session(sessionId);
      paid.status = 'complete';
      paid.payment_status = 'paid';
      paid.payment_intent = id('pi');
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
  } satisfies Omit<StripeFake, 'failExpire'>);
  return fake;
}
