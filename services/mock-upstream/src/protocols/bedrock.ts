import type { IncomingHttpHeaders } from 'node:http';
import { EventStreamCodec } from '@smithy/core/event-streams';
import { fromUtf8, Hash, toUtf8 } from '@smithy/core/serde';
import { SignatureV4 } from '@smithy/signature-v4';
import type { ReplyPlan } from '../reply-plan.ts';
import { anthropicProtocol } from './anthropic.ts';
import type { Protocol, StreamEvent } from './protocol.ts';

/**
 * Amazon Bedrock's runtime for Anthropic models: `POST /model/{modelId}/invoke` and
 * `/model/{modelId}/invoke-with-response-stream`. What it does, and the mock with it:
 * - the body is Anthropic's messages body with `anthropic_version: bedrock-2023-05-31` and without
 *   `model` or `stream` (refused as a ValidationException, 400 `{message}`);
 * - requests are signed with SigV4, which the mock checks by signing the request it received again
 *   with the expected secret (`@smithy/signature-v4`, the AWS SDK's signer); a Bedrock API key as
 *   `Authorization: Bearer` is taken too. A wrong signature is 403, and so is a right one made
 *   with an expired session token (one starting `expired-`) or dated over 5 minutes away;
 * - answers are Anthropic's, naming Anthropic's model (`BEDROCK_MODEL`), not the id called;
 * - streams are AWS event-stream frames (`@smithy/core`'s codec writes the CRCs), each `chunk`
 *   event holding one Anthropic event in base64; the last carries
 *   `amazon-bedrock-invocationMetrics`; `stream_error` sends a `modelStreamErrorException` frame.
 */

export const BEDROCK_MODEL = 'claude-mock-bedrock-20250101';
export const BEDROCK_ANTHROPIC_VERSION = 'bedrock-2023-05-31';
const EVENT_STREAM = 'application/vnd.amazon.eventstream';
const EXCEPTION = 'modelStreamErrorException';

const codec = new EventStreamCodec(toUtf8, fromUtf8);

function stringHeader(value: string) {
  return { type: 'string' as const, value };
}

function frame(event: StreamEvent): Uint8Array {
  if (event.event === EXCEPTION) {
    return codec.encode({
      headers: {
        ':exception-type': stringHeader(EXCEPTION),
        ':content-type': stringHeader('application/json'),
        ':message-type': stringHeader('exception'),
      },
      body: fromUtf8(JSON.stringify(event.data)),
    });
  }
  const bytes = Buffer.from(JSON.stringify(event.data)).toString('base64');
  return codec.encode({
    headers: {
      ':event-type': stringHeader('chunk'),
      ':content-type': stringHeader('application/json'),
      ':message-type': stringHeader('event'),
    },
    body: fromUtf8(JSON.stringify({ bytes })),
  });
}

function errorBody(status: number, message: string) {
  if (status === 429) return { message: 'Too many requests, please wait before trying again.' };
  return { message };
}

/** Bedrock refuses a body that is not its own: the version, and no `model` or `stream`. */
function refuse(_directives: unknown, body?: Record<string, unknown>) {
  if (!body) return undefined;
  const problem =
    body.anthropic_version !== BEDROCK_ANTHROPIC_VERSION
      ? 'required key [anthropic_version] not found or not bedrock-2023-05-31'
      : 'model' in body
        ? 'extraneous key [model] is not permitted'
        : 'stream' in body
          ? 'extraneous key [stream] is not permitted'
          : null;
  return problem ? { status: 400, body: { message: `Malformed input request: #: ${problem}` } } : undefined;
}

const AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=[0-9a-f]{64}$/;

function dateOf(amzDate: string | undefined): Date | null {
  const match = amzDate?.match(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/);
  if (!match) return null;
  const [, year, month, day, hour, minute, second] = match;
  return new Date(`${year}-${month}-${day}T${hour}:${minute}:${second}Z`);
}

/**
 * Checks a SigV4 signature by signing the received request again with the expected secret: the
 * same method, path, query, signed headers, body, date, key id, region and service. Any change in
 * transit, or another secret, gives another signature.
 */
export async function verifySigV4(
  request: { method: string; url: string; headers: IncomingHttpHeaders; body: string },
  secretAccessKey: string,
): Promise<boolean> {
  const authorization = request.headers.authorization;
  const match = typeof authorization === 'string' ? authorization.match(AUTHORIZATION) : null;
  const signingDate = dateOf(request.headers['x-amz-date'] as string | undefined);
  if (!match || !signingDate) return false;
  const [, accessKeyId, , region, service, signedHeaderList] = match;
  const headers: Record<string, string> = {};
  for (const name of signedHeaderList!.split(';')) {
    const value = request.headers[name];
    if (typeof value !== 'string') return false;
    headers[name] = value;
  }
  const sessionToken = headers['x-amz-security-token'];
  const url = new URL(request.url, `http://${headers.host ?? 'localhost'}`);
  const query: Record<string, string> = {};
  for (const [name, value] of url.searchParams) query[name] = value;
  const signer = new SignatureV4({
    service: service!,
    region: region!,
    credentials: { accessKeyId: accessKeyId!, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) },
    sha256: Hash.bind(null, 'sha256'),
    applyChecksum: false,
  });
  const signed = await signer.sign(
    {
      method: request.method,
      protocol: 'http:',
      hostname: url.hostname,
      path: url.pathname,
      query,
      headers,
      body: request.body,
    },
    { signingDate },
  );
  return signed.headers.authorization === authorization;
}

/** Session tokens the mock treats as past their expiry, as STS tokens become after their hour. */
export const EXPIRED_SESSION_TOKEN_PREFIX = 'expired-';
/** How far a signing date may be from the receiver's clock before AWS calls the signature expired. */
const SIGNATURE_SKEW_MS = 5 * 60_000;

/** What AWS answers for a signature that is right but no longer valid: 403, `{message}`. */
function expiry(request: { headers: IncomingHttpHeaders }): string | null {
  const token = request.headers['x-amz-security-token'];
  if (typeof token === 'string' && token.startsWith(EXPIRED_SESSION_TOKEN_PREFIX))
    return 'The security token included in the request is expired';
  const signed = dateOf(request.headers['x-amz-date'] as string | undefined);
  if (signed && Math.abs(Date.now() - signed.getTime()) > SIGNATURE_SKEW_MS)
    return `Signature expired: ${request.headers['x-amz-date']} is now earlier than the allowed time.`;
  return null;
}

async function authorize(
  request: { method: string; url: string; headers: IncomingHttpHeaders; body: string },
  expectedApiKey: string,
) {
  if (request.headers.authorization === `Bearer ${expectedApiKey}`) return null;
  if (await verifySigV4(request, expectedApiKey)) {
    const expired = expiry(request);
    return expired ? { status: 403, body: { message: expired } } : null;
  }
  return {
    status: 403,
    body: {
      message:
        'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.',
    },
  };
}

const asBedrock = (plan: ReplyPlan): ReplyPlan => ({ ...plan, model: BEDROCK_MODEL });

function bedrockProtocol(stream: boolean): Protocol {
  return {
    ...anthropicProtocol,
    readRequest: (body) => ({ ...anthropicProtocol.readRequest(body), stream }),
    isAuthorized: () => false,
    authorize,
    errorBody,
    refuse,
    streamContentType: EVENT_STREAM,
    encodeFrame: frame,
    reply: (plan, request) => anthropicProtocol.reply(asBedrock(plan), request),
    stream(plan, request) {
      const base = anthropicProtocol.stream(asBedrock(plan), request);
      const usage = plan.usage;
      const events = base.events.map((event) =>
        event.event === 'message_stop' && usage
          ? {
              ...event,
              data: {
                ...(event.data as Record<string, unknown>),
                'amazon-bedrock-invocationMetrics': {
                  inputTokenCount: usage.inputTokens,
                  outputTokenCount: usage.outputTokens,
                  invocationLatency: 120,
                  firstByteLatency: 40,
                  cacheReadInputTokenCount: usage.cacheRead,
                  cacheWriteInputTokenCount: usage.cacheWrite + usage.cacheWrite1h,
                },
              },
            }
          : event,
      );
      return { ...base, events };
    },
    streamError: () => ({
      event: EXCEPTION,
      data: { message: 'The model stream failed.', originalStatusCode: 500 },
    }),
  };
}

export const bedrockInvokeProtocol = bedrockProtocol(false);
export const bedrockStreamProtocol = bedrockProtocol(true);

const PATH = /^\/model\/[^/]+\/(invoke|invoke-with-response-stream)$/;

/** Bedrock's protocol for a path, or undefined when the path is not one of Bedrock's. */
export function bedrockProtocolFor(path: string): Protocol | undefined {
  const match = path.match(PATH);
  if (!match) return undefined;
  return match[1] === 'invoke' ? bedrockInvokeProtocol : bedrockStreamProtocol;
}
