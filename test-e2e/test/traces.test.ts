/**
 * W3C trace context: a client's `traceparent` continues through the gateway to the provider call
 * and the control plane's internal API; the gateway's log line names the trace; with
 * OTEL_EXPORTER_OTLP_ENDPOINT set, both services export their spans to a local OTLP/HTTP
 * receiver, linked parent to child.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatRequest, mockRequests, openaiClient } from '../src/clients.ts';
import { signUpCustomer } from '../src/customer.ts';
import { closeCheckingLedger } from '../src/ledger.ts';
import { type E2EStack, type RunningGatewayProcess, startStack } from '../src/stack.ts';

interface ExportedSpan {
  service: string;
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
}

/** A minimal OTLP/HTTP (JSON) trace receiver: keeps every span it is sent. */
function otlpReceiver(): Promise<{ url: string; spans: ExportedSpan[]; server: Server }> {
  const spans: ExportedSpan[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.method === 'POST' && request.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: Array<{
            resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
            scopeSpans: Array<{ spans: Array<Omit<ExportedSpan, 'service'>> }>;
          }>;
        };
        for (const resourceSpans of body.resourceSpans) {
          const service =
            resourceSpans.resource.attributes.find((attribute) => attribute.key === 'service.name')?.value
              .stringValue ?? '';
          for (const scope of resourceSpans.scopeSpans)
            for (const span of scope.spans) spans.push({ ...span, service });
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, server }),
    ),
  );
}

let stack: E2EStack;
let receiver: Awaited<ReturnType<typeof otlpReceiver>>;
let exporting: RunningGatewayProcess;
let plainGateway: RunningGatewayProcess;
let plain: OpenAI;
let traced: OpenAI;

beforeAll(async () => {
  receiver = await otlpReceiver();
  stack = await startStack('traces', { controlPlaneEnv: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } });
  plainGateway = await stack.startGateway('plain');
  exporting = await stack.startGateway('traced', { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });
  const customer = await signUpCustomer(stack, { credits: 10_000_000n });
  const { secret } = await customer.createKey({ name: 'traces' });
  plain = openaiClient(plainGateway.url, secret);
  traced = openaiClient(exporting.url, secret);
});
afterAll(async () => {
  await closeCheckingLedger(stack);
  await new Promise((resolve) => receiver.server.close(resolve));
});

const newTraceparent = () => {
  const traceId = randomBytes(16).toString('hex');
  const parentId = randomBytes(8).toString('hex');
  return { traceId, parentId, header: `00-${traceId}-${parentId}-01` };
};
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;

/** The provider call the mock recorded for `tag`, and the parts of its traceparent. */
async function upstreamTrace(tag: string): Promise<{ traceId: string; parentId: string }> {
  const [upstream] = await mockRequests(stack.mockUrl, tag);
  const match = TRACEPARENT.exec(upstream?.headers.traceparent ?? '');
  expect(match, `traceparent at the provider: ${upstream?.headers.traceparent}`).not.toBeNull();
  return { traceId: match![1]!, parentId: match![2]! };
}

describe('trace context', () => {
  it('carries the client traceparent to the provider, as a child of the gateway, and logs the trace id', async () => {
    const client = newTraceparent();
    await plain.chat.completions.create(chatRequest('gpt-e2e', 'Hi @mock(tag=trace-client)'), {
      headers: { traceparent: client.header },
    });
    const upstream = await upstreamTrace('trace-client');
    expect(upstream.traceId).toBe(client.traceId);
    // The gateway's own span is the provider call's parent, not the client's span.
    expect(upstream.parentId).not.toBe(client.parentId);
    let line: string | undefined;
    for (let attempt = 0; attempt < 50 && !line; attempt++) {
      const gatewayLog = await readFile(plainGateway.service.logFile, 'utf8');
      line = gatewayLog
        .split('\n')
        .find(
          (entry) => entry.includes('"msg":"request"') && entry.includes(`"traceId":"${client.traceId}"`),
        );
      // The gateway writes its request line after the answer, to a file: read it again.
      if (!line) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(line, 'the request log line names the trace').toBeDefined();
  });

  it('starts a trace when the client sends none (or a malformed one)', async () => {
    await plain.chat.completions.create(chatRequest('gpt-e2e', 'Hi @mock(tag=trace-new)'));
    await plain.chat.completions.create(chatRequest('gpt-e2e', 'Hi @mock(tag=trace-bad)'), {
      headers: { traceparent: `00-${'0'.repeat(32)}-${'1'.repeat(16)}-01` },
    });
    const fresh = await upstreamTrace('trace-new');
    const replaced = await upstreamTrace('trace-bad');
    expect(fresh.traceId).not.toBe(replaced.traceId);
    expect(replaced.traceId).not.toBe('0'.repeat(32));
  });

  it('exports linked spans of the gateway and the control plane when an OTLP endpoint is set', async () => {
    const client = newTraceparent();
    await traced.chat.completions.create(chatRequest('gpt-e2e', 'Hi @mock(tag=trace-otlp)'), {
      headers: { traceparent: client.header },
    });
    const upstream = await upstreamTrace('trace-otlp');
    let spans: ExportedSpan[] = [];
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      spans = receiver.spans.filter((span) => span.traceId === client.traceId);
      const services = new Set(spans.map((span) => span.service));
      if (services.has('tollgate-gateway') && services.has('tollgate-control-plane')) break;
      // Spans are exported in batches on the exporters' own schedule: look again.
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const gateway = spans.find((span) => span.service === 'tollgate-gateway');
    expect(gateway, 'the gateway exported its span').toBeDefined();
    expect(gateway!.name).toBe('POST /v1/chat/completions');
    expect(gateway!.parentSpanId).toBe(client.parentId);
    expect(upstream.parentId).toBe(gateway!.spanId);
    const internal = spans.filter((span) => span.service === 'tollgate-control-plane');
    expect(internal.map((span) => span.name)).toContain('POST /internal/v1/reservations');
    for (const span of internal) expect(span.parentSpanId).toBe(gateway!.spanId);
  });
});
