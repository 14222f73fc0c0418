import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  DirectiveError,
  type Directives,
  directivesDrawn,
  directivesForKey,
  directivesForModel,
  readDirectives,
} from './directives.ts';
import { anthropicProtocol } from './protocols/anthropic.ts';
import { azureProtocolFor } from './protocols/azure-openai.ts';
import { bedrockProtocolFor } from './protocols/bedrock.ts';
import { geminiProtocolFor } from './protocols/gemini.ts';
import { openAiChatProtocol } from './protocols/openai-chat.ts';
import { openAiResponsesProtocol } from './protocols/openai-responses.ts';
import type { Protocol } from './protocols/protocol.ts';
import { tokenAnswer, vertexProtocolFor } from './protocols/vertex.ts';
import { createRecorder, type MockStats, type RecordedRequest, type Recorder } from './recorder.ts';
import { planReply } from './reply-plan.ts';
import { renderFrames, sendBody, sendJson, sendStream, wait } from './transport.ts';

export type { Directives } from './directives.ts';
export { AZURE_MODEL } from './protocols/azure-openai.ts';
export { BEDROCK_MODEL, EXPIRED_SESSION_TOKEN_PREFIX } from './protocols/bedrock.ts';
export type { MockStats, RecordedRequest } from './recorder.ts';
export { DEFAULT_WORDS, estimateInputTokens, MOCK_MODEL, sampleArguments } from './reply-plan.ts';

export interface MockUpstreamOptions {
  /** When set, requests must carry this key (x-api-key for Messages, Bearer for OpenAI). */
  expectedApiKey?: string;
  /** How many requests the ring buffer keeps (default 200). */
  recordCapacity?: number;
}

export interface StartOptions extends MockUpstreamOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  host?: string;
}

export interface RunningMockUpstream {
  url: string;
  port: number;
  server: Server;
  stats(): MockStats;
  requests(tag?: string): RecordedRequest[];
  reset(): void;
  /** Closes the server and drops open connections (streams in flight included). */
  close(): Promise<void>;
}

const PROTOCOLS: Record<string, Protocol> = {
  '/v1/messages': anthropicProtocol,
  '/v1/chat/completions': openAiChatProtocol,
  '/v1/responses': openAiResponsesProtocol,
};

const NOT_FOUND = { error: { type: 'not_found_error', message: 'Not found' } };
/** Longest body text kept per recorded request, so 200 recordings stay small in memory. */
const MAX_RECORDED_BODY_CHARS = 1 << 20;

function recordedBody(text: string): { body: string; bodyTruncated?: true } {
  if (text.length <= MAX_RECORDED_BODY_CHARS) return { body: text };
  // A plain slice would keep the whole original string alive; copy the kept part.
  return { body: Buffer.from(text.slice(0, MAX_RECORDED_BODY_CHARS)).toString(), bodyTruncated: true };
}

function readBody(request: IncomingMessage): Promise<{ text: string; bytes: number }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    request.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      bytes += chunk.length;
    });
    request.on('end', () => {
      const whole = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes);
      resolve({ text: whole.toString('utf8'), bytes });
    });
    request.on('error', reject);
  });
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(',') : value;
}

function handleIntrospection(
  path: string,
  request: IncomingMessage,
  response: ServerResponse,
  recorder: Recorder,
) {
  if (request.method === 'GET' && path === '/__mock/stats') return sendJson(response, 200, recorder.stats());
  if (request.method === 'GET' && path === '/__mock/requests') {
    const tag = new URL(request.url ?? '/', 'http://mock').searchParams.get('tag') ?? undefined;
    return sendJson(response, 200, { requests: recorder.requests(tag) });
  }
  if (request.method === 'POST' && path === '/__mock/reset') {
    recorder.reset();
    response.writeHead(204).end();
    return;
  }
  sendJson(response, 404, NOT_FOUND);
}

async function answer(
  protocol: Protocol,
  rawBody: { text: string; bytes: number },
  directives: Directives,
  request: IncomingMessage,
  response: ServerResponse,
  options: MockUpstreamOptions,
) {
  if (directives.delay && !(await wait(response, directives.delay))) return;
  const { expectedApiKey } = options;
  if (expectedApiKey !== undefined) {
    const refused = protocol.authorize
      ? await protocol.authorize(
          {
            method: request.method ?? 'POST',
            url: request.url ?? '/',
            headers: request.headers,
            body: rawBody.text,
          },
          expectedApiKey,
        )
      : protocol.isAuthorized(request.headers, expectedApiKey)
        ? null
        : { status: 401, body: protocol.errorBody(401, 'Invalid API key.') };
    if (refused) return sendJson(response, refused.status, refused.body);
  }
  if (directives.status !== undefined) {
    const headers =
      directives.retryAfter === undefined ? undefined : { 'retry-after': String(directives.retryAfter) };
    const message = `Simulated upstream error (${directives.status}).`;
    return sendJson(response, directives.status, protocol.errorBody(directives.status, message), headers);
  }
  let body: unknown;
  try {
    body = JSON.parse(rawBody.text);
  } catch {
    return sendJson(response, 400, protocol.errorBody(400, 'The request body is not valid JSON.'));
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return sendJson(response, 400, protocol.errorBody(400, 'The request body must be a JSON object.'));
  }
  const refusal = protocol.refuse?.(directives, body as Record<string, unknown>);
  if (refusal) return sendJson(response, refusal.status, refusal.body);
  const protocolRequest = protocol.readRequest(body as Record<string, unknown>);
  const plan = planReply(protocolRequest, directives, rawBody.bytes);
  if (!protocolRequest.stream)
    return sendBody(response, protocol.reply(plan, protocolRequest, directives), directives);
  const frames = renderFrames(protocol.stream(plan, protocolRequest, directives), protocol, directives);
  await sendStream(response, frames, directives, protocol.streamContentType);
}

function createListener(options: MockUpstreamOptions, recorder: Recorder) {
  return async (request: IncomingMessage, response: ServerResponse) => {
    const url = request.url ?? '/';
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    if (path === '/health' && request.method === 'GET') return sendJson(response, 200, { status: 'ok' });
    if (path.startsWith('/__mock/')) return handleIntrospection(path, request, response, recorder);
    const rawBody = await readBody(request);
    const protocol =
      request.method === 'POST'
        ? (PROTOCOLS[path] ??
          azureProtocolFor(path) ??
          bedrockProtocolFor(path) ??
          geminiProtocolFor(path, url) ??
          vertexProtocolFor(path, url))
        : undefined;
    let directives: Directives;
    let directiveError: string | undefined;
    try {
      directives = readDirectives(request.headers['x-mock'], rawBody.text);
      if (directives.onlyModel !== undefined)
        directives = directivesForModel(directives, modelOf(rawBody.text));
      if (directives.onlyKey !== undefined) directives = directivesForKey(directives, request.headers);
      if (directives.failPercent !== undefined) directives = directivesDrawn(directives);
    } catch (error) {
      if (!(error instanceof DirectiveError)) throw error;
      directives = {};
      directiveError = error.message;
    }
    recorder.record({
      method: request.method ?? 'GET',
      path,
      headers: request.headers,
      ...recordedBody(rawBody.text),
      bodyBytes: rawBody.bytes,
      tag: directives.tag,
      anthropicVersion: firstHeader(request.headers['anthropic-version']),
      anthropicBeta: firstHeader(request.headers['anthropic-beta']),
      receivedAt: Date.now(),
    });
    if (path === '/token' && request.method === 'POST') {
      const token = tokenAnswer(rawBody.text);
      return sendJson(response, token.status, token.body);
    }
    if (!protocol) return sendJson(response, 404, NOT_FOUND);
    // Azure answers a call without an api-version as an unknown resource.
    if (path.startsWith('/openai/') && !new URL(url, 'http://mock').searchParams.get('api-version'))
      return sendJson(response, 404, { error: { code: '404', message: 'Resource not found' } });
    if (directiveError) return sendJson(response, 400, protocol.errorBody(400, directiveError));
    await answer(protocol, rawBody, directives, request, response, options);
  };
}

/** The `model` of a JSON body, or undefined. */
function modelOf(text: string): unknown {
  try {
    return (JSON.parse(text) as { model?: unknown }).model;
  } catch {
    return undefined;
  }
}

function failSafely(response: ServerResponse, error: unknown): void {
  // A bug in the mock must show up in the test that hit it, not crash the process.
  if (response.headersSent) {
    response.destroy(error instanceof Error ? error : undefined);
    return;
  }
  sendJson(response, 500, {
    error: { type: 'api_error', message: `mock upstream failed: ${String(error)}` },
  });
}

function build(options: MockUpstreamOptions): { server: Server; recorder: Recorder } {
  const recorder = createRecorder(options.recordCapacity);
  const listener = createListener(options, recorder);
  const server = createServer((request, response) => {
    listener(request, response).catch((error: unknown) => failSafely(response, error));
  });
  return { server, recorder };
}

/** The mock provider as an http.Server, not yet listening (main.ts passes it to `listen`). */
export function createMockUpstream(options: MockUpstreamOptions = {}): Server {
  return build(options).server;
}

/** Starts the mock in-process (tests): defaults to a free port on 127.0.0.1. */
export async function startMockUpstream(options: StartOptions = {}): Promise<RunningMockUpstream> {
  const { server, recorder } = build(options);
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}`,
    port,
    server,
    stats: () => recorder.stats(),
    requests: (tag) => recorder.requests(tag),
    reset: () => recorder.reset(),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
