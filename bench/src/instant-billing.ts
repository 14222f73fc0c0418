/**
 * A stand-in for the control plane's internal API that answers reservations and finishes at once,
 * from memory: the ceiling of any billing design that keeps the gateway as it is (one hop, no
 * Postgres, no work). Everything else (catalog, key lookups, heartbeats) and the first reservation
 * of each key and alias go to the real control plane, so the answers carry real ids. Nothing it
 * "finishes" is recorded: a measurement aid, never a way to run the gateway.
 *
 * Usage: node src/instant-billing.ts <port> <control plane internal URL>
 */
import { createServer, type IncomingMessage } from 'node:http';
import { request } from 'undici';

const [portArgument, upstreamArgument] = process.argv.slice(2);
const port = Number(portArgument);
const upstream = new URL(upstreamArgument ?? '');

interface Learned {
  keyId: string;
  accountId: string;
  providerId: string;
  upstreamModel: string;
}
const learned = new Map<string, Learned>();

function readBody(incoming: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    incoming.on('error', reject);
  });
}

async function forward(method: string, path: string, authorization: string | undefined, body: string) {
  const answer = await request(new URL(path, upstream), {
    method: method as 'GET' | 'POST',
    headers: {
      'content-type': 'application/json',
      ...(authorization ? { authorization } : {}),
    },
    ...(method === 'POST' ? { body } : {}),
  });
  return { status: answer.statusCode, text: await answer.body.text() };
}

interface Item {
  reservationId: string;
  keyDigest: string;
  alias: string;
  limits?: unknown;
}

const ZERO = { tokens: '0', credits: '0' };

createServer(async (incoming, outgoing) => {
  const body = await readBody(incoming);
  const path = incoming.url ?? '/';
  const reply = (status: number, text: string) => {
    outgoing.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
    });
    outgoing.end(text);
  };
  try {
    if (path === '/internal/v1/reservations') {
      const { items, limiter } = JSON.parse(body) as { items: Item[]; limiter?: unknown };
      const unknown = items.filter((item) => !learned.has(`${item.keyDigest} ${item.alias}`));
      if (unknown.length > 0) {
        // Learn from the real control plane; its answers (refusals included) go back unchanged.
        const real = await forward('POST', path, incoming.headers.authorization, body);
        const parsed = JSON.parse(real.text) as {
          results?: Array<Learned & { ok: boolean; reservationId: string }>;
        };
        for (const result of parsed.results ?? []) {
          const item = items.find((candidate) => candidate.reservationId === result.reservationId);
          if (item && result.ok) learned.set(`${item.keyDigest} ${item.alias}`, result);
        }
        return reply(real.status, real.text);
      }
      const results = items.map((item) => {
        const known = learned.get(`${item.keyDigest} ${item.alias}`) as Learned;
        return {
          ok: true,
          reservationId: item.reservationId,
          keyId: known.keyId,
          accountId: known.accountId,
          providerId: known.providerId,
          upstreamModel: known.upstreamModel,
          reserved: ZERO,
          // As the control plane answers: limits taken here (the stand-in takes none), so the
          // gateway does not take them again and releases the slot as it would.
          limited: item.limits !== undefined && limiter !== undefined,
        };
      });
      return reply(200, JSON.stringify({ results }));
    }
    if (path === '/internal/v1/reservations/finish') {
      const { items } = JSON.parse(body) as { items: Array<{ reservationId: string; action: string }> };
      const status = { settle: 'settled', release: 'released', hold: 'held' } as Record<string, string>;
      const results = items.map((item) => ({
        reservationId: item.reservationId,
        status: status[item.action],
        replay: false,
        charged: ZERO,
        writtenOff: ZERO,
      }));
      return reply(200, JSON.stringify({ results }));
    }
    const real = await forward(incoming.method ?? 'GET', path, incoming.headers.authorization, body);
    reply(real.status, real.text);
  } catch (error) {
    reply(503, JSON.stringify({ code: 'billing_unavailable', message: String(error) }));
  }
}).listen(port, '127.0.0.1');
