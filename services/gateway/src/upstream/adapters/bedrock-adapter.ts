import { EventStreamCodec } from '@smithy/core/event-streams';
import { fromUtf8, Hash, toUtf8 } from '@smithy/core/serde';
import { SignatureV4 } from '@smithy/signature-v4';
import { PROVIDER_KIND_SURFACES } from '@tollgate/schemas';
import { isRecord, parseJson, readCount, readOptionalCount } from '../json-scan.ts';
import type { SseEvent } from '../sse.ts';
import type {
  MeteredSurface,
  StreamDecoder,
  StreamEventVerdict,
  StreamUsageTracker,
  UpstreamAdapter,
  UpstreamRequest,
  UpstreamTarget,
  UsageFigures,
} from '../types.ts';
import { plainUsage } from '../types.ts';
import { anthropicAdapter, MessagesUsageTracker } from './anthropic-adapter.ts';
import { assertSurface, trimBaseUrl } from './surface.ts';

/**
 * Amazon Bedrock, Anthropic models (docs/providers.md): InvokeModel and
 * InvokeModelWithResponseStream. The body is Anthropic's messages body without `model` and
 * `stream` and with Bedrock's `anthropic_version`; the model id is in the URL. Answers are
 * Anthropic's; streams come in AWS's binary event-stream framing, each `chunk` event holding one
 * Anthropic stream event, base64-encoded. Requests are signed with SigV4 (an access key pair) or
 * carry a Bedrock API key as a Bearer token.
 */

export const BEDROCK_ANTHROPIC_VERSION = 'bedrock-2023-05-31';
export const BEDROCK_STREAM_CONTENT_TYPE = 'application/vnd.amazon.eventstream';

/** An AWS key pair, the secret written as JSON; anything else is a Bedrock API key. */
export interface AwsKeyPair {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  /** Needed only when the base URL's host does not name the region (a proxy, a test server). */
  region?: string;
}

export function readKeyPair(credential: string): AwsKeyPair | null {
  if (!credential.trimStart().startsWith('{')) return null;
  const parsed = parseJson(credential);
  if (!isRecord(parsed)) throw new Error('the Bedrock credential is not a JSON object');
  const { accessKeyId, secretAccessKey, sessionToken, region } = parsed;
  if (typeof accessKeyId !== 'string' || typeof secretAccessKey !== 'string')
    throw new Error('the Bedrock credential needs accessKeyId and secretAccessKey');
  return {
    accessKeyId,
    secretAccessKey,
    ...(typeof sessionToken === 'string' && sessionToken ? { sessionToken } : {}),
    ...(typeof region === 'string' && region ? { region } : {}),
  };
}

/** `bedrock-runtime.us-east-1.amazonaws.com`, its FIPS and VPC endpoint forms. */
const REGION_IN_HOST = /(?:^|\.)bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.(?:vpce\.)?amazonaws\.com(?:\.cn)?$/;

export function regionOf(baseUrl: string, keyPair: AwsKeyPair): string {
  const region = new URL(baseUrl).hostname.match(REGION_IN_HOST)?.[1] ?? keyPair.region;
  if (!region) throw new Error('the Bedrock region is neither in the base URL nor in the credential');
  return region;
}

/**
 * Signs a request with SigV4 (`@smithy/signature-v4`, the AWS SDK's own signer): the headers to
 * send, `authorization`, `x-amz-date` and `x-amz-security-token` added. `host` is signed but not
 * returned: the HTTP client sends the same value from the URL.
 */
export async function signRequest(input: {
  url: string;
  method?: string;
  headers: Record<string, string>;
  body: string;
  keyPair: AwsKeyPair;
  region: string;
  service: string;
  /** Tests: the signing time. */
  at?: Date;
}): Promise<Record<string, string>> {
  const url = new URL(input.url);
  const signer = new SignatureV4({
    service: input.service,
    region: input.region,
    credentials: {
      accessKeyId: input.keyPair.accessKeyId,
      secretAccessKey: input.keyPair.secretAccessKey,
      ...(input.keyPair.sessionToken ? { sessionToken: input.keyPair.sessionToken } : {}),
    },
    sha256: Hash.bind(null, 'sha256'),
    // Bedrock, like every service but S3, reads the payload hash from the signature alone.
    applyChecksum: false,
  });
  const query: Record<string, string | string[]> = {};
  for (const [name, value] of url.searchParams) {
    const seen = query[name];
    query[name] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value];
  }
  const signed = await signer.sign(
    {
      method: input.method ?? 'POST',
      protocol: url.protocol,
      hostname: url.hostname,
      ...(url.port ? { port: Number(url.port) } : {}),
      path: url.pathname,
      query,
      headers: { ...input.headers, host: url.host },
      body: input.body,
    },
    input.at ? { signingDate: input.at } : {},
  );
  const { host: _host, ...headers } = signed.headers;
  return headers;
}

function buildRequest(input: {
  target: UpstreamTarget;
  surface: MeteredSurface;
  clientHeaders: Pick<Headers, 'get'>;
  stream?: boolean;
  body?: string;
}): UpstreamRequest {
  assertSurface(bedrockAdapter, input.surface);
  const stream = input.stream === true;
  const modelId = encodeURIComponent(input.target.upstreamModel);
  const url = `${trimBaseUrl(input.target.provider.baseUrl)}/model/${modelId}/${stream ? 'invoke-with-response-stream' : 'invoke'}`;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: stream ? BEDROCK_STREAM_CONTENT_TYPE : 'application/json',
  };
  const credential = input.target.credential;
  // A Bedrock API key goes as a Bearer token; a key pair signs the final request (authorize).
  if (credential !== null && readKeyPair(credential) === null) headers.authorization = `Bearer ${credential}`;
  return {
    url,
    headers,
    ...(input.body === undefined ? {} : { body: bedrockBody(input.body, input.clientHeaders) }),
  };
}

/**
 * The messages body as Bedrock takes it: no `model` (it is in the URL) or `stream` (the URL says),
 * `anthropic_version: bedrock-2023-05-31`, and the client's betas as `anthropic_beta`.
 */
function bedrockBody(body: string, clientHeaders: Pick<Headers, 'get'>): string {
  const parsed = parseJson(body);
  if (!isRecord(parsed)) return body;
  const { model: _model, stream: _stream, ...rest } = parsed;
  const betas = clientHeaders
    .get('anthropic-beta')
    ?.split(',')
    .map((beta) => beta.trim())
    .filter((beta) => beta.length > 0);
  return JSON.stringify({
    anthropic_version: BEDROCK_ANTHROPIC_VERSION,
    ...rest,
    ...(betas && betas.length > 0 ? { anthropic_beta: betas } : {}),
  });
}

async function authorize(
  request: { url: string; headers: Record<string, string>; body: string },
  target: UpstreamTarget,
): Promise<UpstreamRequest> {
  const keyPair = target.credential === null ? null : readKeyPair(target.credential);
  if (keyPair === null) return request;
  const headers = await signRequest({
    url: request.url,
    headers: request.headers,
    body: request.body,
    keyPair,
    region: regionOf(request.url, keyPair),
    service: 'bedrock',
  });
  return { url: request.url, headers };
}

/** An event the relay refuses as invalid: a frame that failed its CRC or is not what Bedrock sends. */
const INVALID: SseEvent = { event: 'invalid', data: '', raw: '' };

/** A frame's prelude (total length, headers length, prelude CRC) and message CRC. */
const FRAME_OVERHEAD = 16;
/** Larger than any frame Bedrock sends; a length past it means the stream is not what it claims. */
const MAX_FRAME_BYTES = 16 * 1024 * 1024;

function headerValue(headers: Record<string, { value: unknown }>, name: string): string | undefined {
  const value = headers[name]?.value;
  return typeof value === 'string' ? value : undefined;
}

/**
 * Decodes the binary event stream into the SSE events of the messages protocol. Frames are cut at
 * their length prefix here; `@smithy/core`'s codec decodes each whole frame and checks its CRCs.
 * A `chunk` event's base64 payload is one Anthropic event; an exception
 * (`modelStreamErrorException`, `throttlingException`...) becomes the protocol's `error` event.
 * Bedrock's `amazon-bedrock-invocationMetrics` stay in the event's data, for the usage, and out of
 * what a client is relayed.
 */
class EventStreamDecoder implements StreamDecoder {
  readonly #codec = new EventStreamCodec(toUtf8, fromUtf8);
  #pending: Buffer = Buffer.alloc(0);
  #broken = false;

  push(chunk: Uint8Array): SseEvent[] {
    if (this.#broken) return [];
    this.#pending = this.#pending.length === 0 ? Buffer.from(chunk) : Buffer.concat([this.#pending, chunk]);
    const events: SseEvent[] = [];
    while (this.#pending.length >= 4) {
      const length = this.#pending.readUInt32BE(0);
      if (length < FRAME_OVERHEAD || length > MAX_FRAME_BYTES) return this.#fail(events);
      if (this.#pending.length < length) break;
      const frame = this.#pending.subarray(0, length);
      this.#pending = this.#pending.subarray(length);
      let message: ReturnType<EventStreamCodec['decode']>;
      try {
        message = this.#codec.decode(frame);
      } catch {
        return this.#fail(events);
      }
      const event = eventOf(message);
      if (event) events.push(event);
    }
    return events;
  }

  flush(): SseEvent[] {
    // Bytes left over are a frame cut short: the stream ended without its end event, which the
    // relay reports as a cut stream.
    return [];
  }

  #fail(events: SseEvent[]): SseEvent[] {
    this.#broken = true;
    events.push(INVALID);
    return events;
  }
}

function eventOf(message: ReturnType<EventStreamCodec['decode']>): SseEvent | null {
  const headers = message.headers as Record<string, { value: unknown }>;
  const type = headerValue(headers, ':message-type');
  if (type === 'event')
    return headerValue(headers, ':event-type') === 'chunk' ? chunkEvent(toUtf8(message.body)) : null;
  if (type !== 'exception' && type !== 'error') return INVALID;
  const kind = headerValue(headers, ':exception-type') ?? headerValue(headers, ':error-code') ?? 'error';
  // The exception's own message is not kept: it may name the account, the model or a host.
  return { event: 'error', data: JSON.stringify({ type: 'error', error: { type: kind } }), raw: '' };
}

const METRICS = 'amazon-bedrock-invocationMetrics';

function chunkEvent(payload: string): SseEvent {
  const chunk = parseJson(payload);
  const bytes = isRecord(chunk) && typeof chunk.bytes === 'string' ? chunk.bytes : null;
  if (bytes === null) return INVALID;
  const data = Buffer.from(bytes, 'base64').toString('utf8');
  const event = parseJson(data);
  if (!isRecord(event) || typeof event.type !== 'string') return INVALID;
  let relayed = data;
  if (event[METRICS] !== undefined) {
    const { [METRICS]: _metrics, ...rest } = event;
    relayed = JSON.stringify(rest);
  }
  return { event: event.type, data, raw: `event: ${event.type}\ndata: ${relayed}\n\n` };
}

/**
 * Anthropic's usage (input in message_start, output in message_delta) as for the `anthropic` kind;
 * when a stream's message_delta carried no usage, Bedrock's own invocation metrics on the last
 * event (`inputTokenCount`, `outputTokenCount`, cache reads and writes) are the figures.
 */
class BedrockUsageTracker implements StreamUsageTracker {
  readonly #messages = new MessagesUsageTracker();
  #metrics: UsageFigures | null = null;

  observe(event: SseEvent): StreamEventVerdict {
    const verdict = this.#messages.observe(event);
    if (verdict === 'terminal') this.#metrics = readMetrics(parseJson(event.data));
    return verdict;
  }

  usage(): UsageFigures | null {
    return this.#messages.usage() ?? this.#metrics;
  }
}

function readMetrics(event: unknown): UsageFigures | null {
  const metrics = isRecord(event) ? event[METRICS] : undefined;
  if (!isRecord(metrics)) return null;
  const input = readCount(metrics.inputTokenCount);
  const output = readCount(metrics.outputTokenCount);
  const cacheRead = readOptionalCount(metrics.cacheReadInputTokenCount);
  const cacheWrite = readOptionalCount(metrics.cacheWriteInputTokenCount);
  if (input === null || output === null || cacheRead === null || cacheWrite === null) return null;
  // Bedrock's metrics, like Anthropic's usage, count cache reads and writes beside the input.
  return { ...plainUsage(input, output), cacheReadTokens: cacheRead, cacheWriteTokens: cacheWrite };
}

export const bedrockAdapter: UpstreamAdapter = {
  kind: 'bedrock',
  surfaces: PROVIDER_KIND_SURFACES.bedrock,
  wireProtocol: 'messages',
  // Bedrock answers with Anthropic's model name, not the Bedrock model id it was called with.
  namesItsOwnModel: true,
  streamFraming: { contentType: BEDROCK_STREAM_CONTENT_TYPE, createDecoder: () => new EventStreamDecoder() },
  buildRequest,
  authorize,
  extractUsage: (surface, body) => anthropicAdapter.extractUsage(surface, body),
  createStreamUsageTracker(surface) {
    assertSurface(bedrockAdapter, surface);
    return new BedrockUsageTracker();
  },
};
