import { connect, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { startFakeUpstream } from '../src/upstream/testing/fake-upstream.ts';
import { STACK_CATALOG } from './stack.ts';
import { useStack } from './support.ts';

/**
 * A provider that streams far more than any buffer between it and the client (64 MiB in 4 KiB
 * events), writing only as fast as its socket takes it, and counting what it wrote: a gateway that
 * buffered for a client that does not read would let it write everything.
 */
const TOTAL_BYTES = 64 * 1024 * 1024;
const USAGE = { prompt_tokens: 30, completion_tokens: 700 };
let written = 0;
let finished = false;
const provider = await startFakeUpstream(async (_request, response) => {
  response.writeHead(200, { 'content-type': 'text/event-stream' });
  const base = { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'upstream-gpt-y2' };
  const event = `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: 'x'.repeat(4000) } }] })}\n\n`;
  while (written < TOTAL_BYTES && !response.destroyed) {
    written += event.length;
    if (!response.write(event)) await new Promise((resolve) => response.once('drain', resolve));
  }
  response.end(`data: ${JSON.stringify({ ...base, choices: [], usage: USAGE })}\n\ndata: [DONE]\n\n`);
  finished = true;
});
afterAll(() => provider.close());

const STALL_MS = 1_500;
const t = useStack('gw-slow-reader', {
  catalog: (mockUrl) =>
    STACK_CATALOG(mockUrl).replace(
      'aliases:',
      `  - { id: fake-openai, kind: openai, base_url: "${provider.url}/v1", credential: TOLLGATE_PROVIDER_MOCK_KEY }
aliases:
  - { alias: gpt-firehose, provider: fake-openai, upstream_model: upstream-gpt-y2, protocols: [chat_completions],
      price: { input: 2, output: 8 }, default_max_output_tokens: 1000, max_output_tokens: 4096 }`,
    ),
  gatewayEnv: { STREAM_CLIENT_STALL_MS: String(STALL_MS) },
});

/** Resolves once `read()` has started and then not changed for `quietMs`. */
async function plateau(read: () => number, quietMs: number): Promise<number> {
  // Polls a byte count: the provider's writes announce nothing to the test.
  while (read() === 0) await new Promise((resolve) => setTimeout(resolve, 20));
  let last = read();
  for (;;) {
    // Real time: a plateau is the absence of progress over a span of time.
    await new Promise((resolve) => setTimeout(resolve, quietMs));
    if (read() === last) return last;
    last = read();
  }
}

describe('a client that stops reading a stream', () => {
  it('pauses the provider instead of buffering, is cut off after its stall deadline, and is charged what the provider reports', async () => {
    const key = await t.key({ credits: 10_000_000n });
    const body = JSON.stringify({
      model: 'gpt-firehose',
      stream: true,
      messages: [{ role: 'user', content: 'everything, please' }],
    });
    const url = new URL(t.stack.gatewayUrl);
    // A raw client that sends its request and then reads nothing.
    const client: Socket = connect(Number(url.port), url.hostname);
    client.pause();
    client.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: ${url.host}\r\nauthorization: Bearer ${key.secret}\r\n` +
        `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );

    // What the provider could write while nobody reads stops growing: the socket buffers between
    // it and the client, a small part of the stream, not the stream.
    const stalledAt = await plateau(() => written, 300);
    expect(stalledAt).toBeGreaterThan(0);
    expect(stalledAt).toBeLessThan(TOTAL_BYTES / 2);
    expect(finished).toBe(false);

    // Past the deadline the gateway gives the client up and reads the provider on for its usage,
    // as for a client that left: the call is charged what the provider reported.
    let row: Awaited<ReturnType<typeof t.stack.reservations>>[number] | undefined;
    for (let attempt = 0; attempt < 200 && row?.status !== 'settled'; attempt++) {
      // Real time: the stall deadline has to pass before the settlement exists to wait for.
      await new Promise((resolve) => setTimeout(resolve, 100));
      await t.stack.settled();
      row = (await t.stack.reservations(key.accountId))[0];
    }
    expect(finished).toBe(true);
    expect([row?.status, row?.outcome, row?.http_status, row?.charged_credits]).toEqual([
      'settled',
      'client_disconnected',
      499,
      30n * 2n + 700n * 8n,
    ]);

    // The client, reading at last, finds the stream cut short: no end of stream was ever sent.
    let received = '';
    client.setEncoding('utf8');
    client.on('data', (chunk: string) => {
      received += chunk.slice(-64);
    });
    client.resume();
    await new Promise((resolve) => client.once('close', resolve));
    expect(received).toContain('x');
    expect(received).not.toContain('[DONE]');
  });
});
